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

  it("counts a non-finite metric as a NaN loss only when it is a loss the trainer or the blueprint names", () => {
    expect(classifyFailure(facts({ nonFiniteMetric: { step: 7, key: "actor/pg_loss" } })).failureClass).toBe("nan_loss");
    expect(classifyFailure(facts({ nonFiniteMetric: { step: 7, key: "actor/grad_norm" } })).failureClass).toBe("unknown");
    expect(classifyFailure(facts({ nonFiniteMetric: { step: 7, key: "policy_entropy" }, lossMetrics: ["policy_entropy"] })).failureClass).toBe("nan_loss");
    // A finite loss followed by a NaN grad norm on the same line is not a NaN loss.
    expect(classifyFailure(facts({ logTail: "step:3 - loss: 0.52 - grad_norm: nan" })).failureClass).toBe("unknown");
  });

  it("puts the cause before its echo: a CUDA fault or an OOM beats the NCCL watchdog it triggers", () => {
    const watchdog =
      "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.";
    expect(classifyFailure(facts({ logTail: `RuntimeError: CUDA error: an illegal memory access was encountered\n${watchdog}` })).failureClass).toBe(
      "cuda_fault",
    );
    expect(classifyFailure(facts({ logTail: `torch.OutOfMemoryError: CUDA out of memory.\n${watchdog}` })).failureClass).toBe("out_of_memory");
    expect(classifyFailure(facts({ logTail: watchdog })).failureClass).toBe("distributed_failure");
    expect(classifyFailure(facts({ logTail: "", exitCode: 134 }))).toMatchObject({ failureClass: "distributed_failure", evidence: "exit code 134" });
  });

  it("reads a Hugging Face 401 'Repository Not Found' as a missing model, not a bad API key", () => {
    const line =
      "huggingface_hub.utils._errors.RepositoryNotFoundError: 401 Client Error. Repository Not Found for url: https://huggingface.co/x/y/resolve/main/config.json";
    expect(classifyFailure(facts({ logTail: line })).failureClass).toBe("missing_model");
  });

  it("takes the OOM killer's own words (Ray, the kernel) even when the local counter did not move", () => {
    const line = "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.";
    expect(classifyFailure(facts({ logTail: line, oomKiller: "not_seen" })).failureClass).toBe("out_of_memory");
  });
});
