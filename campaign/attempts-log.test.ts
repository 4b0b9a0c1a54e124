import { describe, expect, it } from "vitest";
import { formatAttemptEntry } from "./attempts-log.ts";

describe("formatAttemptEntry", () => {
  it("writes a log excerpt's terminal escapes as visible text, never raw", () => {
    const text = formatAttemptEntry({ attempt: 2, title: "relaunched", body: "```\nloss nan\x1b[2J\x1b]0;owned\x07\n```", time: new Date(0) });
    expect(text).not.toMatch(/[\x1b\x07]/);
    expect(text).toContain("loss nan\\x1b[2J\\x1b]0;owned\\x07");
    expect(text.startsWith("## Attempt 2: relaunched\n")).toBe(true);
  });
});
