import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { classifyFailure, type FailureFacts } from "./failure-classifier.ts";
import { nonFiniteMetrics } from "./loss-metrics.ts";
import type { Overrides } from "../../blueprints/index.ts";
import { decideRecovery } from "./recovery-playbook.ts";

/**
 * The classifier and the playbook over real failure excerpts from public issue trackers
 * (vLLM, PyTorch, NCCL, verl, Ray, DeepSpeed, Hugging Face, API clients): each entry must
 * get its class and its action. One table, so a new rule that steals another class's
 * excerpts fails here.
 */
interface CorpusEntry {
  id: string;
  source: string;
  excerpt: string;
  exitCode?: number | null;
  signal?: NodeJS.Signals;
  oomKiller?: "seen" | "not_seen";
  /** The metric the supervisor saw go non-finite (metric-stream entries). */
  metric?: string;
  expected: { failureClass: string; action: string; changes?: string };
}

const corpus = JSON.parse(readFileSync(new URL("./__fixtures__/failure-corpus.json", import.meta.url), "utf8")) as { entries: CorpusEntry[] };

// A verl-style run: every knob the playbook may turn is set, a checkpoint exists, an hour is left.
const overrides: Overrides = {
  "actor.ppo_micro_batch_size_per_gpu": 8,
  "actor.optim.lr": 1e-6,
  "rollout.gpu_memory_utilization": 0.6,
  "rollout.max_model_len": 4096,
};

function outcome(entry: CorpusEntry): { failureClass: string; action: string; changes?: string; resume?: boolean; evidence?: string } {
  if (entry.metric !== undefined) {
    const { loss } = nonFiniteMetrics({ [entry.metric]: Number.NaN });
    if (loss.length === 0) return { failureClass: "not_a_failure", action: "warning" };
  }
  const facts: FailureFacts = {
    logTail: entry.excerpt,
    exitCode: entry.exitCode === undefined ? 1 : entry.exitCode,
    signal: entry.signal ?? null,
    ...(entry.oomKiller ? { oomKiller: entry.oomKiller } : {}),
    ...(entry.metric ? { nonFiniteMetric: { step: 12, key: entry.metric } } : {}),
  };
  const classification = classifyFailure(facts);
  const decision = decideRecovery({ classification, attemptsOfClass: 0, overrides, hasCheckpoint: true, budgetLeftMs: 3_600_000, freePort: () => 29501 });
  if (decision.kind === "relaunch") {
    return {
      failureClass: classification.failureClass,
      action: decision.strategy,
      ...(decision.changed[0] ? { changes: decision.changed[0].key } : {}),
      resume: decision.resumeFromCheckpoint,
      evidence: classification.evidence,
    };
  }
  return {
    failureClass: classification.failureClass,
    action: decision.kind === "fail" && decision.reason.includes("not retryable") ? "fail_fast" : decision.kind,
    evidence: classification.evidence,
  };
}

describe("the failure corpus", () => {
  it("holds at least 60 excerpts, each with its source", () => {
    expect(corpus.entries.length).toBeGreaterThanOrEqual(60);
    for (const entry of corpus.entries) expect(entry.source, entry.id).toMatch(/^https:\/\/github\.com\/[\w.-]+\/[\w.-]+\/(issues|pull)\/\d+$/);
    expect(new Set(corpus.entries.map((entry) => entry.id)).size).toBe(corpus.entries.length);
  });

  it.each(corpus.entries.map((entry) => [entry.id, entry] as const))("%s", (_id, entry) => {
    const got = outcome(entry);
    expect({ failureClass: got.failureClass, action: got.action, ...(entry.expected.changes ? { changes: got.changes } : {}) }).toEqual(entry.expected);
    // A retry continues from the checkpoint; a fail-fast quotes the decisive line.
    if (got.resume !== undefined) expect(got.resume).toBe(true);
    if (got.action === "fail_fast") expect(entry.excerpt).toContain(got.evidence?.replace(/ \(exit -?\d+\)$/, ""));
  });

  it("classifies every class of the corpus right, all of them (per class: right / total)", () => {
    const byClass = new Map<string, { right: number; total: number; actions: Set<string> }>();
    for (const entry of corpus.entries) {
      const got = outcome(entry);
      const row = byClass.get(entry.expected.failureClass) ?? { right: 0, total: 0, actions: new Set<string>() };
      row.total += 1;
      if (got.failureClass === entry.expected.failureClass && got.action === entry.expected.action) row.right += 1;
      row.actions.add(got.action);
      byClass.set(entry.expected.failureClass, row);
    }
    const table = [...byClass].map(([failureClass, row]) => `${failureClass}: ${row.right}/${row.total} (${[...row.actions].join(", ")})`);
    expect(table.filter((line) => !/: (\d+)\/\1 /.test(line))).toEqual([]);
    for (const needed of [
      "distributed_failure",
      "kv_cache_memory",
      "cuda_fault",
      "missing_model",
      "out_of_memory",
      "external_api_auth",
      "external_api_rate_limit",
      "nan_loss",
      "not_a_failure",
    ]) {
      expect(byClass.has(needed), needed).toBe(true);
    }
  });
});
