import { appendFile, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import type { StepMetrics } from "./step-metrics.ts";

/**
 * Where the server keeps what survives it, under `experiment_dir`:
 *
 * ```
 * checkpoints/<engine's own folder per step>   written by engine.save
 * checkpoints/swarm-state-<step>.json           {step, path, savedAt, metrics[]} for that checkpoint
 * checkpoints/latest.json                       the same record for the newest checkpoint
 * metrics.jsonl                                 one StepMetrics per line, appended per step
 * ```
 *
 * metrics.jsonl is append-only: after a resume, the steps redone after the checkpoint
 * appear again further down (a reader keeps the last line of each step).
 *
 * JSON files are written atomically (temp file + rename) so a SIGKILL mid-write leaves the
 * previous checkpoint usable. Not stored: the pool and running episodes (they belong to
 * the policy of before the restart and are collected again).
 */

const stateSchema = z.object({
  step: z.number().int().nonnegative(),
  path: z.string().min(1),
  savedAt: z.string(),
  metrics: z.array(z.record(z.string(), z.number())),
});

export type CheckpointRecord = z.infer<typeof stateSchema>;

export class CheckpointStore {
  readonly checkpointDirectory: string;

  constructor(readonly experimentDirectory: string) {
    this.checkpointDirectory = join(experimentDirectory, "checkpoints");
  }

  async record(step: number, path: string, metrics: readonly StepMetrics[]): Promise<CheckpointRecord> {
    const record: CheckpointRecord = { step, path, savedAt: new Date().toISOString(), metrics: metrics.filter((entry) => entry.step <= step) };
    await writeJsonAtomic(join(this.checkpointDirectory, `swarm-state-${step}.json`), record);
    await writeJsonAtomic(join(this.checkpointDirectory, "latest.json"), record);
    return record;
  }

  /** The newest checkpoint's record, or undefined when none was taken. */
  async latest(): Promise<CheckpointRecord | undefined> {
    return this.#read(join(this.checkpointDirectory, "latest.json"));
  }

  /** The record for a checkpoint taken at `step`, when the server wrote one. */
  async forStep(step: number): Promise<CheckpointRecord | undefined> {
    return this.#read(join(this.checkpointDirectory, `swarm-state-${step}.json`));
  }

  async appendMetrics(metrics: StepMetrics): Promise<void> {
    await mkdir(this.experimentDirectory, { recursive: true });
    await appendFile(join(this.experimentDirectory, "metrics.jsonl"), `${JSON.stringify(metrics)}\n`);
  }

  async #read(file: string): Promise<CheckpointRecord | undefined> {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    const parsed = stateSchema.safeParse(JSON.parse(text));
    if (!parsed.success)
      throw new Error(
        `${file}: not a swarm checkpoint record (${parsed.error.issues[0]?.message ?? "invalid"}); delete it or point resume at another checkpoint`,
      );
    return parsed.data;
  }
}

async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  await mkdir(join(file, ".."), { recursive: true });
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(temporary, `${JSON.stringify(value, null, 2)}\n`);
  await rename(temporary, file);
}
