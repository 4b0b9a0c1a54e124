import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkpointStep, setAsideCheckpointsFrom } from "./checkpoint-choice.ts";

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("the checkpoint a NaN recovery resumes from", () => {
  it("reads the step from the names trainers give checkpoints", () => {
    expect(["global_step_40", "checkpoint-120", "step-7", "step_30.pt", "ckpt_5", "iter_0000040", "last.pt", "latest.json"].map(checkpointStep)).toEqual([
      40,
      120,
      7,
      30,
      5,
      40,
      undefined,
      undefined,
    ]);
  });

  it("moves the checkpoints written at or after the divergence aside and points verl's tracker at the last good one", async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-ckpt-"));
    const checkpoints = join(dir, "checkpoints");
    for (const step of [10, 20, 30]) await mkdir(join(checkpoints, `global_step_${step}`), { recursive: true });
    await writeFile(join(checkpoints, "latest_checkpointed_iteration.txt"), "30\n");
    await writeFile(join(checkpoints, "notes.txt"), "undated");
    const choice = await setAsideCheckpointsFrom(checkpoints, 25, join(dir, "aside"));
    expect(choice).toMatchObject({ movedAside: ["global_step_30"], resumeStep: 20, undated: ["notes.txt"] });
    expect((await readdir(checkpoints)).sort()).toEqual(["global_step_10", "global_step_20", "latest_checkpointed_iteration.txt", "notes.txt"]);
    expect(await readdir(join(dir, "aside"))).toEqual(["global_step_30"]);
    expect((await readFile(join(checkpoints, "latest_checkpointed_iteration.txt"), "utf8")).trim()).toBe("20");
  });

  it("points a3r's swarm latest.json at the last good swarm state", async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-ckpt-"));
    for (const step of [2, 4]) {
      await writeFile(join(dir, `checkpoint-${step}.json`), "{}");
      await writeFile(join(dir, `swarm-state-${step}.json`), JSON.stringify({ step, path: join(dir, `checkpoint-${step}.json`) }));
    }
    await writeFile(join(dir, "latest.json"), JSON.stringify({ step: 4 }));
    const choice = await setAsideCheckpointsFrom(dir, 3, join(dir, "aside"));
    expect(choice).toMatchObject({ movedAside: ["checkpoint-4.json", "swarm-state-4.json"], resumeStep: 2 });
    expect(JSON.parse(await readFile(join(dir, "latest.json"), "utf8"))).toMatchObject({ step: 2 });
  });

  it("leaves a folder of undated checkpoints alone and says so", async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-ckpt-"));
    await writeFile(join(dir, "last.json"), "{}");
    expect(await setAsideCheckpointsFrom(dir, 3, join(dir, "aside"))).toMatchObject({ movedAside: [], resumeStep: null, undated: ["last.json"] });
    expect(await readdir(dir)).toEqual(["last.json"]);
  });
});
