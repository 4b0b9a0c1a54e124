import { describe, expect, it } from "vitest";
import { REDACTED, redactSecrets } from "./redact.ts";

describe("redactSecrets", () => {
  it("removes provider keys, bearer tokens and named secrets", () => {
    const text = [
      "using key sk-ant-api03-abcdefghijklmnopqrstuv",
      "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz012345",
      "Authorization: Bearer abcdefghijklmnop.qrstuv",
      'password: "hunter2hunter2"',
      "token ghp_abcdefghijklmnopqrstuvwxyz0123",
      "loss=0.25 step=10",
    ].join("\n");
    const redacted = redactSecrets(text, []);
    expect(redacted).not.toContain("abcdefghijklmnopqrstuv");
    expect(redacted).not.toContain("hunter2");
    expect(redacted).toContain(`Bearer ${REDACTED}`);
    expect(redacted).toContain("loss=0.25 step=10");
  });

  it("replaces known secret values whatever their shape", () => {
    expect(redactSecrets("conn to redis://:plainpass123@host", ["plainpass123"])).toBe(`conn to redis://:${REDACTED}@host`);
  });

  it("leaves ordinary training logs alone", () => {
    const log = "step:12 - reward_mean:0.42 - kl:0.001\nCUDA out of memory. Tried to allocate 2.00 GiB";
    expect(redactSecrets(log, [])).toBe(log);
  });
});
