import { describe, expect, it } from "vitest";
import { isA3rError } from "../core/errors.ts";
import { parseLedgerEntry, summarizeLedger, type LedgerEntry } from "./ledger.ts";

const time = "2026-11-29T10:00:00.000Z";
const call = (role: string, fields: Partial<Record<string, unknown>> = {}) =>
  ({
    time,
    kind: "llm",
    role,
    provider: "anthropic",
    model: "m",
    inputTokens: 1000,
    outputTokens: 200,
    cachedTokens: 100,
    costUsd: 0.01,
    durationMs: 900,
    ok: true,
    ...fields,
  }) as LedgerEntry;

function caught(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("ledger entries", () => {
  it("accepts both kinds with exactly their fields and fills in the time", () => {
    const now = new Date("2026-11-29T11:00:00.000Z");
    const gpu = parseLedgerEntry({ kind: "gpu", blueprintId: "s1-a", host: "gpu-01", gpus: 2, hours: 1.5 }, now);
    expect(gpu).toEqual({ time: now.toISOString(), kind: "gpu", blueprintId: "s1-a", host: "gpu-01", gpus: 2, hours: 1.5 });
    expect(parseLedgerEntry(call("plan", { ok: false, errorCode: "LLM_TIMEOUT" }))).toMatchObject({ ok: false, errorCode: "LLM_TIMEOUT" });
  });

  it.each([
    ["an unknown field", { ...call("plan"), temperature: 0.2 }, "temperature"],
    ["negative tokens", call("plan", { inputTokens: -1 }), "inputTokens"],
    ["fractional tokens", call("plan", { outputTokens: 1.5 }), "outputTokens"],
    ["a missing cost", (({ costUsd: _, ...rest }) => rest)(call("plan") as Record<string, unknown>), "costUsd"],
    ["an unknown kind", { time, kind: "cpu", hours: 1 }, "kind"],
    ["a gpu entry with llm fields", { time, kind: "gpu", blueprintId: "a", host: "h", gpus: 1, hours: 1, model: "m" }, "model"],
    ["a bad time", { ...call("plan"), time: "yesterday" }, "time"],
    ["an uppercase role", call("Plan"), "role"],
  ])("refuses %s with SCHEMA_INVALID naming the field", (_name, entry, field) => {
    const error = caught(() => parseLedgerEntry(entry));
    expect(isA3rError(error, "SCHEMA_INVALID")).toBe(true);
    expect((error as Error).message).toContain(field);
  });
});

describe("ledger summary", () => {
  it("totals tokens and dollars per role and GPU-hours per blueprint, host and kind", () => {
    const entries: LedgerEntry[] = [
      call("plan"),
      call("plan", { inputTokens: 500, outputTokens: 50, cachedTokens: 0, costUsd: 0.005, ok: false, errorCode: "LLM_TIMEOUT" }),
      call("analyze", { costUsd: 0.02 }),
      call("critic"),
      { time, kind: "gpu", blueprintId: "s1-a", host: "gpu-01", gpus: 2, hours: 1.5 },
      { time, kind: "gpu", blueprintId: "s1-a", host: "gpu-02", gpus: 1, hours: 0.5 },
      { time, kind: "gpu", blueprintId: "constructor", host: "gpu-02", gpus: 4, hours: 0.25 },
    ];
    const summary = summarizeLedger(entries);
    expect(summary.llm.byRole.plan).toEqual({
      calls: 2,
      failedCalls: 1,
      inputTokens: 1500,
      outputTokens: 250,
      cachedTokens: 100,
      costUsd: 0.015,
      durationMs: 1800,
    });
    expect(summary.llm.byRole.analyze.costUsd).toBeCloseTo(0.02);
    expect(summary.llm.byRole.write.calls).toBe(0);
    expect(summary.llm.byRole.critic?.calls).toBe(1);
    expect(summary.llm.calls).toBe(4);
    expect(summary.byKind.llm).toEqual({ entries: 4, tokens: 3500 + 650, costUsd: expect.closeTo(0.045, 9) as unknown as number });
    expect(summary.gpu.gpuHours).toBeCloseTo(2 * 1.5 + 0.5 + 1);
    expect(summary.gpu.byBlueprint).toEqual({ "s1-a": 3.5, constructor: 1 });
    expect(summary.gpu.byHost).toEqual({ "gpu-01": 3, "gpu-02": 1.5 });
    expect(summary.byKind.gpu).toEqual({ entries: 3, gpuHours: 4.5 });
  });

  it("is all zeros for an empty ledger", () => {
    const summary = summarizeLedger([]);
    expect(summary.byKind).toEqual({ llm: { entries: 0, tokens: 0, costUsd: 0 }, gpu: { entries: 0, gpuHours: 0 } });
  });
});
