import { z } from "zod";
import { A3rError } from "../core/errors.ts";
import type { RecordProblem } from "./finding.ts";
import { parsePythonJson, stringifyPythonJson } from "../core/python-json.ts";
import { appendJsonLine, describeIssues, readJsonLines } from "./jsonl-file.ts";

/**
 * metrics.jsonl: one `{step, time, ...numbers}` per line, e.g.
 * `{"step":120,"time":"2026-11-29T10:00:00.000Z","reward_mean":0.52,"attempt":2}`.
 * A value that was not a finite number is written as Python's json writes it (`NaN`,
 * `Infinity`, `-Infinity`, core/python-json.ts) and read back as that number: a NaN loss is
 * a NaN loss. A `null` (how older workers stored them) reads as a missing value. An optional numeric `attempt` lets
 * steps restart after a resume from a checkpoint without looking like a bug.
 *
 * Left out: metric names and meaning (the blueprint's `metric` names the one that
 * matters), units, and aggregation.
 */
export const metricsRecordSchema = z
  .object({
    step: z.number().int().nonnegative(),
    time: z.iso.datetime({ offset: true }),
  })
  // Any number, NaN and the infinities included (z.number() refuses them).
  .catchall(z.custom<number>((value) => typeof value === "number", "expected a number").nullable());

export type MetricsRecord = z.infer<typeof metricsRecordSchema>;

export interface MetricsRecordInput {
  step: number;
  time?: string;
  [name: string]: number | string | null | undefined;
}

export interface MetricsRead {
  exists: boolean;
  records: MetricsRecord[];
  /** Line numbers of the records, parallel to `records`. */
  lines: number[];
  problems: RecordProblem[];
}

export function makeMetricsRecord(input: MetricsRecordInput, now: Date = new Date()): MetricsRecord {
  const record: Record<string, unknown> = { step: input.step, time: input.time ?? now.toISOString() };
  for (const [name, value] of Object.entries(input)) {
    if (name === "step" || name === "time" || value === undefined) continue;
    record[name] = value;
  }
  const checked = metricsRecordSchema.safeParse(record);
  if (!checked.success) {
    throw new A3rError("SCHEMA_INVALID", `metrics record is invalid: ${describeIssues(checked.error.issues)}`, {
      hint: "a metrics record is {step: integer >= 0, time?: ISO time, ...name: number}",
    });
  }
  return checked.data;
}

export async function appendMetrics(path: string, input: MetricsRecordInput, now?: Date): Promise<MetricsRecord> {
  return (await appendMetricsLine(path, input, now)).record;
}

/** appendMetrics, also giving the exact bytes written (the result-dir writer tells its own lines from foreign ones by them). */
export async function appendMetricsLine(path: string, input: MetricsRecordInput, now?: Date): Promise<{ record: MetricsRecord; bytes: Buffer }> {
  const record = makeMetricsRecord(input, now);
  return { record, bytes: await appendJsonLine(path, record, stringifyPythonJson) };
}

export async function readMetrics(path: string): Promise<MetricsRead> {
  const content = await readJsonLines(path, parsePythonJson);
  const records: MetricsRecord[] = [];
  const lines: number[] = [];
  const problems = [...content.problems];
  for (const { line, value } of content.lines) {
    const checked = metricsRecordSchema.safeParse(value);
    if (checked.success) {
      records.push(checked.data);
      lines.push(line);
    } else {
      problems.push({
        file: path,
        line,
        code: "METRICS_RECORD_INVALID",
        message: `metrics line is not {step, time, ...numbers}: ${describeIssues(checked.error.issues)}`,
      });
    }
  }
  problems.sort((a, b) => a.line - b.line);
  return { exists: content.exists, records, lines, problems };
}
