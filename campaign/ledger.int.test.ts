import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendFile, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isA3rError } from "../core/errors.ts";
import { JsonlLedger, type LedgerSink } from "./ledger.ts";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "a3r-ledger-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("JSONL ledger", () => {
  it("records entries from the LLM layer and the worker, and summarizes them", async () => {
    const ledger = new JsonlLedger(join(dir, "ledger.jsonl"));
    const sink: LedgerSink = ledger;
    await sink.record({
      time: "2026-11-29T10:00:00.000Z",
      kind: "llm",
      role: "plan",
      provider: "openai",
      model: "gpt",
      inputTokens: 100,
      outputTokens: 20,
      cachedTokens: 0,
      costUsd: 0.5,
      durationMs: 10,
      ok: true,
    });
    await sink.record({
      kind: "llm",
      role: "analyze",
      provider: "anthropic",
      model: "claude",
      inputTokens: 50,
      outputTokens: 5,
      cachedTokens: 40,
      costUsd: 0.25,
      durationMs: 10,
      ok: false,
      errorCode: "LLM_TIMEOUT",
    });
    await sink.record({ kind: "gpu", blueprintId: "s1-a", host: "gpu-01", gpus: 4, hours: 0.5 });
    const lines = (await readFile(ledger.path, "utf8")).trim().split("\n");
    expect(lines).toHaveLength(3);
    expect(Object.keys(JSON.parse(lines[2]!) as object)).toEqual(["time", "kind", "blueprintId", "host", "gpus", "hours"]);

    const summary = await ledger.summarize();
    expect(summary.byKind).toEqual({ llm: { entries: 2, tokens: 175, costUsd: 0.75 }, gpu: { entries: 1, gpuHours: 2 } });
    expect(summary.llm.byRole.analyze).toMatchObject({ calls: 1, failedCalls: 1, cachedTokens: 40 });
  });

  it("refuses an invalid entry without writing it", async () => {
    const ledger = new JsonlLedger(join(dir, "ledger.jsonl"));
    await expect(ledger.record({ kind: "gpu", blueprintId: "s1-a", host: "gpu-01", gpus: -1, hours: 1 })).rejects.toSatisfy((error) =>
      isA3rError(error, "SCHEMA_INVALID"),
    );
    expect((await ledger.read()).entries).toEqual([]);
  });

  it("reads past bad lines and reports them with their numbers", async () => {
    const ledger = new JsonlLedger(join(dir, "ledger.jsonl"));
    await ledger.record({ kind: "gpu", blueprintId: "s1-a", host: "gpu-01", gpus: 1, hours: 1 });
    await appendFile(ledger.path, '{"time":"2026-11-29T10:00:00.000Z","kind":"gpu","blueprintId":"x","host":"h","gpus":1,"hours":1,"note":"extra"}\n');
    await appendFile(ledger.path, '{"kind":"llm"');
    const { entries, problems } = await ledger.read();
    expect(entries).toHaveLength(1);
    expect(problems.map((problem) => [problem.line, problem.code])).toEqual([
      [2, "LEDGER_ENTRY_INVALID"],
      [3, "LINE_TORN"],
    ]);
    expect(problems[0]?.message).toContain("note");
    expect((await ledger.summarize()).gpu.gpuHours).toBe(1);
  });
});
