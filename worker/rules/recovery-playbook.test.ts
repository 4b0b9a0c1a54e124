import { describe, expect, it } from "vitest";
import { decideRecovery, type RecoveryContext } from "./recovery-playbook.ts";
import type { FailureClass } from "./failure-classifier.ts";

const context = (failureClass: FailureClass, overrides: Partial<RecoveryContext> = {}): RecoveryContext => ({
  classification: { failureClass, ruleId: "test", evidence: "the log line" },
  attemptsOfClass: 0,
  overrides: {},
  hasCheckpoint: true,
  ...overrides,
});

describe("decideRecovery", () => {
  it("halves the smallest batch knob on out of memory, down to a floor", () => {
    const decision = decideRecovery(context("out_of_memory", { overrides: { train_batch_size: 64, micro_batch_size: 8 } }));
    // The steps before the OOM are kept: the smaller batch resumes from the checkpoint.
    expect(decision).toMatchObject({ kind: "relaunch", changed: [{ key: "micro_batch_size", from: 8, to: 4 }], resumeFromCheckpoint: true });
    expect(decideRecovery(context("out_of_memory", { overrides: { micro_batch_size: 8 }, hasCheckpoint: false }))).toMatchObject({
      resumeFromCheckpoint: false,
    });
    expect(decideRecovery(context("out_of_memory", { overrides: { batch_size: 1 } }))).toMatchObject({ kind: "fail" });
  });

  it("reads the base config when the blueprint does not override the batch", () => {
    const decision = decideRecovery(context("out_of_memory", { baseValues: { train_batch_size: 32 } }));
    expect(decision).toMatchObject({ kind: "relaunch", overrides: { train_batch_size: 16 } });
  });

  it("lowers the learning rate and resumes from the checkpoint on NaN", () => {
    expect(decideRecovery(context("nan_loss", { overrides: { lr: 1e-5 } }))).toMatchObject({
      kind: "relaunch",
      changed: [{ key: "lr", from: 1e-5, to: 5e-6 }],
      resumeFromCheckpoint: true,
    });
  });

  it("names the config's own port as the old value when no override set it", () => {
    expect(decideRecovery(context("port_in_use", { overrides: {}, baseValues: { port: 29500 }, freePort: () => 46057 }))).toMatchObject({
      kind: "relaunch",
      changed: [{ key: "port", from: 29500, to: 46057 }],
    });
  });

  it("moves to another port", () => {
    expect(decideRecovery(context("port_in_use", { overrides: { port: 8000 }, freePort: () => 8123 }))).toMatchObject({
      kind: "relaunch",
      changed: [{ key: "port", from: 8000, to: 8123 }],
    });
  });

  it("backs off longer on each external API failure, then fails with the reason", () => {
    const delays = [0, 1, 2].map((attemptsOfClass) => decideRecovery(context("external_api_rate_limit", { attemptsOfClass })));
    expect(delays.map((decision) => (decision.kind === "relaunch" ? decision.delayMs : -1))).toEqual([30_000, 120_000, 480_000]);
    expect(decideRecovery(context("external_api_rate_limit", { attemptsOfClass: 3 }))).toEqual({
      kind: "fail",
      reason: "external api rate limit: the log line (gave up after 3 recoveries of this kind)",
    });
  });

  it("fails fast on missing files, modules and models, CUDA faults and refused credentials", () => {
    for (const failureClass of ["missing_file", "missing_module", "missing_model", "cuda_fault", "external_api_auth"] as const) {
      expect(decideRecovery(context(failureClass))).toMatchObject({ kind: "fail", reason: expect.stringContaining("not retryable") });
    }
  });

  it("resumes a killed run only from a checkpoint that exists", () => {
    expect(decideRecovery(context("killed", { hasCheckpoint: false }))).toMatchObject({ kind: "relaunch", resumeFromCheckpoint: false });
    expect(decideRecovery(context("hang"))).toMatchObject({ kind: "relaunch", resumeFromCheckpoint: true });
  });

  it("escalates unknown failures to the language model", () => {
    expect(decideRecovery(context("unknown")).kind).toBe("ask_llm");
    expect(decideRecovery(context("unknown", { attemptsOfClass: 2 })).kind).toBe("fail");
  });

  it("fits a rate-limit back-off into the budget left, and gives up when none fits", () => {
    expect(decideRecovery(context("external_api_rate_limit", { attemptsOfClass: 2, budgetLeftMs: 600_000 }))).toMatchObject({
      kind: "relaunch",
      delayMs: 300_000,
      reason: expect.stringContaining("back-off shortened from 8m to 5m"),
    });
    // A wait that would leave less than twice the last attempt's run time is not made.
    expect(decideRecovery(context("external_api_rate_limit", { budgetLeftMs: 60_000, lastAttemptMs: 29_600 }))).toMatchObject({ kind: "fail" });
    expect(decideRecovery(context("external_api_rate_limit", { budgetLeftMs: 60_000, lastAttemptMs: 10_000 }))).toMatchObject({ delayMs: 30_000 });
    expect(decideRecovery(context("external_api_rate_limit", { budgetLeftMs: 1_500 }))).toEqual({
      kind: "fail",
      reason: "external api rate limit: the log line (gave up after 0 back-offs: the 2s left of the budget leave no room for another wait and retry)",
    });
  });

  it("resumes a distributed job that lost a collective or a rank (NCCL watchdog, SIGABRT)", () => {
    expect(decideRecovery(context("distributed_failure"))).toMatchObject({
      kind: "relaunch",
      strategy: "resume_from_checkpoint",
      changed: [],
      resumeFromCheckpoint: true,
    });
  });

  it("gives vLLM's KV cache more memory or shorter sequences, never a smaller batch", () => {
    const kv = (ruleId: string, extra: Partial<RecoveryContext>) =>
      decideRecovery({ ...context("kv_cache_memory", extra), classification: { failureClass: "kv_cache_memory", ruleId, evidence: "the log line" } });
    const both = { overrides: { "rollout.gpu_memory_utilization": 0.5, "rollout.max_model_len": 8192, micro_batch_size: 4 } };
    expect(kv("vllm-no-cache-blocks", both)).toMatchObject({
      strategy: "adjust_kv_cache",
      changed: [{ key: "rollout.gpu_memory_utilization", from: 0.5, to: 0.6 }],
    });
    expect(kv("vllm-kv-cache-max-model-len", both)).toMatchObject({ changed: [{ key: "rollout.max_model_len", from: 8192, to: 4096 }] });
    // At the ceiling the length goes instead; the config's own nested key is found by its leaf.
    expect(
      kv("vllm-no-cache-blocks", { baseValues: { "actor_rollout_ref.rollout.gpu_memory_utilization": 0.95, "actor_rollout_ref.rollout.max_model_len": 1024 } }),
    ).toMatchObject({
      changed: [{ key: "actor_rollout_ref.rollout.max_model_len", from: 1024, to: 512 }],
    });
    // a3r's own vllm engine spells it in camel case.
    expect(kv("vllm-no-cache-blocks", { baseValues: { "engine.inference.gpuMemoryUtilization": 0.85 } })).toMatchObject({
      changed: [{ key: "engine.inference.gpuMemoryUtilization", from: 0.85, to: 0.95 }],
    });
    expect(kv("vllm-no-cache-blocks", { overrides: { micro_batch_size: 4 } })).toMatchObject({
      kind: "fail",
      reason: expect.stringContaining("a smaller batch would not help"),
    });
  });

  it("finds a nested learning rate (verl's actor_rollout_ref.actor.optim.lr) by its leaf", () => {
    expect(decideRecovery(context("nan_loss", { baseValues: { "actor_rollout_ref.actor.optim.lr": 1e-6 } }))).toMatchObject({
      changed: [{ key: "actor_rollout_ref.actor.optim.lr", from: 1e-6, to: 5e-7 }],
    });
  });
});
