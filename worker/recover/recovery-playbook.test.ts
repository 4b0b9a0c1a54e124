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
    expect(decision).toMatchObject({ kind: "relaunch", changed: [{ key: "micro_batch_size", from: 8, to: 4 }], resumeFromCheckpoint: false });
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

  it("fails fast on missing files and modules", () => {
    for (const failureClass of ["missing_file", "missing_module"] as const) {
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
});
