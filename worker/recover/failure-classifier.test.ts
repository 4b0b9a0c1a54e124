import { describe, expect, it } from "vitest";
import { classifyFailure, type FailureFacts } from "./failure-classifier.ts";

const facts = (overrides: Partial<FailureFacts>): FailureFacts => ({ logTail: "", exitCode: 1, signal: null, ...overrides });

describe("classifyFailure", () => {
  it.each([
    ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "out_of_memory"],
    ["RuntimeError: CUDA error: out of memory", "out_of_memory"],
    ["OSError: [Errno 98] Address already in use", "port_in_use"],
    ["Error: listen EADDRINUSE: address already in use :::8000", "port_in_use"],
    ["ModuleNotFoundError: No module named 'verl'", "missing_module"],
    ["FileNotFoundError: [Errno 2] No such file or directory: '/data/train.parquet'", "missing_file"],
    ["openai.RateLimitError: Error code: 429 - rate limit exceeded", "external_api_rate_limit"],
    ["openai.AuthenticationError: Error code: 401 - invalid api key", "external_api_auth"],
    ["step:40 - loss:nan - reward:0.1", "nan_loss"],
  ] as const)("%s → %s", (line, expected) => {
    const result = classifyFailure(facts({ logTail: `starting\n${line}\nTraceback ends` }));
    expect(result.failureClass).toBe(expected);
    expect(result.evidence).toBe(line);
  });

  it("tells the OOM killer from a plain SIGKILL by the log", () => {
    expect(classifyFailure(facts({ logTail: "step 3\nKilled", exitCode: 137 })).failureClass).toBe("out_of_memory");
    expect(classifyFailure(facts({ logTail: "step 3", exitCode: 137 })).failureClass).toBe("killed");
    expect(classifyFailure(facts({ logTail: "step 3", exitCode: null, signal: "SIGKILL" })).failureClass).toBe("killed");
  });

  it("uses facts the supervisor saw: non-finite metrics and stalls", () => {
    expect(classifyFailure(facts({ nonFiniteMetric: { step: 12, key: "loss" } }))).toMatchObject({
      failureClass: "nan_loss",
      evidence: "metric loss was not finite at step 12",
    });
    expect(classifyFailure(facts({ stalled: true, exitCode: null })).failureClass).toBe("hang");
  });

  it("checks rules in order, so an OOM beats a harmless ENOENT earlier in the log", () => {
    const logTail = "ENOENT: cache miss (harmless)\nmore\nCUDA out of memory";
    expect(classifyFailure(facts({ logTail })).failureClass).toBe("out_of_memory");
  });

  it("falls back to unknown with the last line as evidence", () => {
    expect(classifyFailure(facts({ logTail: "something odd happened\nsegfault in libfoo", exitCode: 139 }))).toEqual({
      failureClass: "unknown",
      ruleId: "none",
      evidence: "segfault in libfoo (exit 139)",
    });
  });

  it('reads exit 137 with the shell\'s "Killed" as the OOM killer only when the kernel counter allows it', () => {
    const killed = { logTail: "step:20 - loss:0.1\nKilled", exitCode: 137, signal: "SIGKILL" as const };
    expect(classifyFailure(facts(killed)).failureClass).toBe("out_of_memory");
    expect(classifyFailure(facts({ ...killed, oomKiller: "seen" })).failureClass).toBe("out_of_memory");
    expect(classifyFailure(facts({ ...killed, oomKiller: "not_seen" }))).toMatchObject({ failureClass: "killed", evidence: "terminated by SIGKILL" });
  });
});
