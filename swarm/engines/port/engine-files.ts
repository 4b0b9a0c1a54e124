import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { z } from "zod";
import type { TrainingSample } from "./engine.ts";
import { EngineError } from "./engine-error.ts";

/** File helpers the engines share (swarm/ imports nothing from the rest of a3r, core/ included). */

/** The parsed JSON, or undefined for text that is not JSON (the caller's schema says what is wrong). */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Temp file + rename, so a crash mid-write leaves the previous file (or none), never half of one. */
export async function writeFileAtomically(path: string, content: string): Promise<void> {
  const temporary = `${path}.tmp-${process.pid}-${Date.now()}`;
  await writeFile(temporary, content);
  await rename(temporary, path);
}

/** Writes a step's batch to `<experimentDir>/batches/step-N.jsonl` (one TrainingSample a line); returns its path. */
export async function writeBatchFile(experimentDir: string, step: number, batch: readonly TrainingSample[]): Promise<string> {
  const directory = join(experimentDir, "batches");
  await mkdir(directory, { recursive: true });
  const file = join(directory, `step-${step}.jsonl`);
  await writeFileAtomically(file, `${batch.map((sample) => JSON.stringify(batchLine(sample))).join("\n")}\n`);
  return file;
}

/** A sample as the batch file's line: the trainer protocol spells top_p in snake_case. */
function batchLine(sample: TrainingSample): object {
  if (sample.topP === undefined) return sample;
  const { topP, ...rest } = sample;
  return { ...rest, top_p: topP };
}

/** Writes `<directory>/checkpoint-<step>.json` atomically; returns its path. */
export async function writeCheckpointRecord(directory: string, step: number, record: object): Promise<string> {
  await mkdir(directory, { recursive: true });
  const path = join(directory, `checkpoint-${step}.json`);
  await writeFileAtomically(path, `${JSON.stringify(record, null, 2)}\n`);
  return path;
}

/** Reads a checkpoint record written by save(); ENGINE_CHECKPOINT_INVALID naming the file and field otherwise. */
export async function readCheckpointRecord<T extends z.ZodType>(path: string, schema: T, kind: string): Promise<z.output<T>> {
  const record = schema.safeParse(safeJson(await readFile(path, "utf8").catch(() => "")));
  if (!record.success) {
    const issue = record.error.issues[0];
    throw new EngineError(
      "ENGINE_CHECKPOINT_INVALID",
      `${path}: not ${kind} checkpoint (${issue?.path.join(".")} ${issue?.message})`,
      "pass the file returned by save()",
    );
  }
  return record.data;
}
