import { describe, expect, it } from "vitest";
import { defaultOptimizer, trainInProcess } from "./in-process-training.ts";
import type { SwarmTask, TaskInstance } from "./task-types.ts";

/**
 * The in-process loop's fixed-protocol evaluation (what the research bench scores sampling
 * knobs by): it measures the weights, not how the run samples its training rollouts.
 */

/** Half the untrained policy's answers earn a point: a reward that moves with every sampled token. */
const evenLength: SwarmTask<TaskInstance> = {
  name: "even-length",
  description: "reward 1 when the answer has an even number of characters",
  sampleTask: (seed) => ({ taskId: `task-${seed}`, word: ["red", "blue", "green", "amber"][seed % 4] }),
  runEpisode: () => Promise.reject(new Error("in process only")),
  async playEpisode(task, ask) {
    const answer = await ask([{ role: "user", content: `Name a colour like ${String(task.word)}.` }], { maxTokens: 4 });
    return { reward: answer.length % 2 === 0 ? 1 : 0, isSuccess: answer.length % 2 === 0 };
  },
};

describe("trainInProcess with a fixed-protocol evaluation", () => {
  it("evaluates after every `every` steps, at its own sampling, whatever the training temperature", async () => {
    // A learning rate too small to move the weights: both runs keep their initial policy.
    // They play different numbers of rollouts at different temperatures, so the engine's random stream is elsewhere at each evaluation.
    const run = (temperature: number, batchSize: number) =>
      trainInProcess({
        task: evenLength,
        steps: 4,
        batchSize,
        numRepeat: 4,
        strategy: "episodes",
        optimizer: { ...defaultOptimizer, lr: 1e-12 },
        seed: 7,
        temperature,
        protocolEval: { every: 2, episodes: 16, temperature: 1, topP: 1 },
      });
    const [cold, hot] = await Promise.all([run(0.05, 2), run(1, 3)]);
    expect(cold.protocolCurve.map((point) => point.step)).toEqual([2, 4]);
    expect(cold.protocolEpisodes).toBe(32);
    expect(cold.protocolCurve, JSON.stringify(cold.protocolCurve)).toSatisfy((curve: { value: number }[]) =>
      curve.every((point) => point.value > 0 && point.value < 1),
    );
    expect(hot.episodes).not.toBe(cold.episodes);
    expect(hot.protocolCurve).toEqual(cold.protocolCurve);
  });
});
