import { copyFile, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { trainerTopicText } from "./fixture-topic.ts";

/**
 * The fast fixture topic for leader tests: a whole two-stage campaign of six short runs
 * on this machine, in classic mode (no swarm), with the heuristic planner.
 *
 * The trainer (test-support/fast-trainer.mjs, run by the absolute path of this Node) logs
 * verl-style `reward_mean` lines for 5 × 200 ms; its final reward depends only on `lr`
 * (best near 0.03) and, by ±0.0005, on the seed. With the default options the heuristic
 * planner, deterministically:
 *
 * 1. screens lr 0.1 (baseline) against lr 0.01, 2 seeds each (4 runs); lr 0.01 is ahead by
 *    far more than the seed noise (separated), and a stage is left to replicate what a
 *    refinement finds, so it refines;
 * 2. refines around lr 0.01: of its two candidates (0.0316 between, 0.001 beyond) only
 *    the first fits the experiment budget of 6 (2 runs);
 * 3. stops: the best is separated from the rest (reason `separated`).
 *
 * No hosts file: `a3r research` then runs it on this machine, 2 runs at a time.
 */
export interface FastTopicOptions {
  /** Folder to write into (the topic's codebase too); default: a new temp folder. */
  dir?: string;
  title?: string;
  stages?: number;
  experiments?: number;
  seeds?: number;
  steps?: number;
  stepMs?: number;
}

const trainerSource = fileURLToPath(new URL("./fast-trainer.mjs", import.meta.url));

/** The trainer's file name inside the topic's folder (its codebase). */
export const fastTrainerName = "trainer.mjs";

/** Blueprint ids of the default campaign, per stage, in plan order. */
export const fastTopicBlueprintIds: readonly (readonly string[])[] = [
  ["s1-baseline-seed1", "s1-baseline-seed2", "s1-lr-0.01-seed1", "s1-lr-0.01-seed2"],
  ["s2-lr-0.0316-seed1", "s2-lr-0.0316-seed2"],
];

/** The topic text for a trainer that lies in `codebase` (see `writeFastTopic`). */
export function fastTopicText(codebase: string, options: Omit<FastTopicOptions, "dir"> = {}): string {
  return trainerTopicText({
    title: options.title ?? "Which lr gives the fast trainer its best final reward?",
    codebase,
    command: `${process.execPath} ${fastTrainerName} --steps ${options.steps ?? 5} --step-ms ${options.stepMs ?? 200}`,
    seeds: options.seeds ?? 2,
    stages: options.stages ?? 3,
    experiments: options.experiments ?? 6,
    question: "Which learning rate gives the fast fixture trainer its best final reward_mean?",
  });
}

/**
 * Writes the trainer and `topic.md` into a folder (a new temp folder unless `dir` is
 * given) and returns the topic file's absolute path. The caller removes the folder.
 */
export async function writeFastTopic(options: FastTopicOptions = {}): Promise<string> {
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), "a3r-fast-topic-")));
  await copyFile(trainerSource, join(dir, fastTrainerName));
  const file = join(dir, "topic.md");
  await writeFile(file, fastTopicText(dir, options));
  return file;
}
