import { describe, expect, it } from "vitest";
import compassWalk from "../../../examples/tasks/compass-walk/task.ts";
import { defaultOptimizer, stepsToReach, trailingMean, trainInProcess, type InProcessTrainingOptions } from "../../../examples/tasks/in-process-training.ts";
import itemColor from "../../../examples/tasks/item-color/task.ts";
import type { SwarmTask, TaskInstance } from "../../../examples/tasks/task-types.ts";
import { slowTests } from "../../../test-support/slow-tests.ts";

/**
 * The embedded engine must really learn: the swarm's demos and the default campaign rely on
 * a reward curve that rises from chance and reacts to the knobs a research campaign turns.
 * Episodes are played by the tasks' own episode logic against the engine, merged by
 * swarm/tracking and trained with GRPO in the worker thread, without HTTP.
 */
// With these seeds item-color first reaches 0.8 (10-step mean) at step 31 and compass-walk
// at step 50; in 45 and 70 steps each ends at 0.93 or more, and lr 3 ends 0.3 or more lower.
const base = { batchSize: 8, numRepeat: 8, strategy: "episodes", optimizer: defaultOptimizer, seed: 11 } as const;
const tasks = [
  { task: itemColor, steps: 45 },
  { task: compassWalk, steps: 70 },
] as unknown as Array<{ task: SwarmTask<TaskInstance>; steps: number }>;

describe("embedded engine learning", () => {
  for (const { task, steps } of tasks) {
    it(`${task.name}: rises from near chance to a mean reward of at least 0.8 within ${steps} steps, and a too-high lr ends worse`, async () => {
      const trained = await trainInProcess({ ...base, steps, task } satisfies InProcessTrainingOptions);
      expect(trained.rewardCurve).toHaveLength(steps);
      expect(trailingMean(trained.rewardCurve.slice(0, 3), 3)).toBeLessThan(0.1);
      const reached = stepsToReach(trained.rewardCurve, 0.8, 10);
      expect(reached).toBeDefined();
      expect(reached!).toBeLessThanOrEqual(steps);
      expect(trailingMean(trained.rewardCurve, 10)).toBeGreaterThanOrEqual(0.8);
      // Merging really happened on the multi-turn task (each episode is one sample there).
      if (task.name === "compass-walk") expect(trained.tokensWithMerge).toBeLessThan(trained.tokensWithoutMerge * 0.75);

      // The knob's effect once (item-color): the multi-turn task repeats it in the slow tier.
      if (task.name === "compass-walk" && !slowTests) return;
      const tooHot = await trainInProcess({ ...base, steps, task, optimizer: { ...defaultOptimizer, lr: 3 } });
      expect(trailingMean(tooHot.rewardCurve, 10)).toBeLessThan(trailingMean(trained.rewardCurve, 10) - 0.15);
    });
  }
});
