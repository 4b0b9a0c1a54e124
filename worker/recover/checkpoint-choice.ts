import { mkdir, readdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * Which checkpoint a NaN recovery resumes from. A trainer that checkpoints every N steps
 * may have written one at (or after) the step whose loss was already non-finite; resuming
 * from that one resumes the divergence. Before the relaunch, the worker moves every
 * checkpoint whose name carries a step at or after the first non-finite loss out of the
 * checkpoint folder (into `<result dir>/checkpoints-diverged/attempt-N/`, kept for
 * inspection), so the trainer's "latest" is the last one taken before the divergence.
 *
 * Names understood: `global_step_40` (verl), `checkpoint-40` (Hugging Face Trainer),
 * `step-40`, `step_40.pt`, `ckpt_40`, `iter_0000040` (Megatron). verl's
 * `latest_checkpointed_iteration.txt` is rewritten to the newest kept step, and a3r's swarm
 * server's `latest.json` becomes a copy of the newest kept `swarm-state-N.json` (or is set
 * aside when none is left). A checkpoint
 * whose name has no step (`last.pt`) cannot be dated and is left alone; the caller says so.
 */
const stepInName = /^(?:global_step|checkpoint|step|ckpt|iter|iteration|swarm-state)[_-]?0*(\d{1,12})(?:\.[a-z0-9]{1,12})?$/i;
const verlTracker = "latest_checkpointed_iteration.txt";
/** a3r's swarm server: `latest.json` is a copy of the newest `swarm-state-N.json` (swarm/server/checkpoint-store.ts). */
const swarmLatest = "latest.json";

export function checkpointStep(name: string): number | undefined {
  const match = stepInName.exec(name);
  return match ? Number(match[1]) : undefined;
}

export interface CheckpointChoice {
  /** Entries moved aside: written at or after the divergence. */
  movedAside: string[];
  /** The newest checkpoint step left in place, or null when none with a step is left. */
  resumeStep: number | null;
  /** Entries without a step in their name (left in place). */
  undated: string[];
  /** Where the moved entries went. */
  asideDir: string;
}

export async function setAsideCheckpointsFrom(checkpointDir: string, fromStep: number, asideDir: string): Promise<CheckpointChoice> {
  const entries = await readdir(checkpointDir).catch(() => [] as string[]);
  const movedAside: string[] = [];
  const undated: string[] = [];
  let resumeStep: number | null = null;
  for (const name of entries.sort()) {
    if (name === verlTracker || name === swarmLatest) continue;
    const step = checkpointStep(name);
    if (step === undefined) {
      undated.push(name);
      continue;
    }
    if (step >= fromStep) {
      await mkdir(asideDir, { recursive: true });
      await rename(join(checkpointDir, name), join(asideDir, name));
      movedAside.push(name);
    } else if (resumeStep === null || step > resumeStep) {
      resumeStep = step;
    }
  }
  if (entries.includes(verlTracker)) {
    const tracked = Number((await readFile(join(checkpointDir, verlTracker), "utf8").catch(() => "")).trim());
    if (Number.isFinite(tracked) && tracked >= fromStep && resumeStep !== null) {
      await writeFile(join(checkpointDir, verlTracker), `${resumeStep}\n`);
    }
  }
  if (entries.includes(swarmLatest)) {
    const latestStep = await readFile(join(checkpointDir, swarmLatest), "utf8").then(
      (text) => (JSON.parse(text) as { step?: unknown }).step,
      () => undefined,
    );
    if (typeof latestStep === "number" && latestStep >= fromStep) {
      const kept = resumeStep === null ? undefined : await readFile(join(checkpointDir, `swarm-state-${resumeStep}.json`), "utf8").catch(() => undefined);
      if (kept !== undefined) {
        await writeFile(join(checkpointDir, swarmLatest), kept);
      } else {
        await mkdir(asideDir, { recursive: true });
        await rename(join(checkpointDir, swarmLatest), join(asideDir, swarmLatest));
        movedAside.push(swarmLatest);
      }
    }
  }
  return { movedAside, resumeStep, undated, asideDir };
}
