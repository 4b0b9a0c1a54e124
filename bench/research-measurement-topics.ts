import { defaultOptimizer, trainInProcess, type InProcessTrainingOptions } from "../examples/tasks/in-process-training.ts";
import itemColor from "../examples/tasks/item-color/task.ts";
import type { SwarmTask, TaskInstance } from "../examples/tasks/task-types.ts";
import { curveArea, type KnownAnswerTopic, type RunResult } from "./research-topic-types.ts";

/**
 * Known-answer topics whose knob changes how the training reward is measured (the
 * research bench, bench/research.bench.ts): the sampling temperature and top_p of the
 * training rollouts. A run at temperature 0.5 scores its own greedier samples, so its
 * training reward says little about how good its policy is. Each run therefore also
 * records the fixed-protocol evaluation the leader plans for such knobs
 * (leader/design/measurement-protocol.ts; the swarm server's `eval_protocol`): 64 eval
 * episodes after every 5 steps, on a task set fixed by the seed, at the base's sampling
 * (temperature 1, top_p 1), never trained on. The truth is that score; the bench judges
 * the campaign on it ("protocol on") and on the training reward ("protocol off").
 */
const steps = 20;
const protocol = { every: 5, episodes: 64, temperature: 1, topP: 1 } as const;
const halving = { rungs: [0.25, 0.5], keep: 0.5, window: 3 };

async function sampledRun(options: Partial<InProcessTrainingOptions>, seed: number): Promise<RunResult> {
  const result = await trainInProcess({
    task: itemColor as unknown as SwarmTask<TaskInstance>,
    steps,
    batchSize: 8,
    numRepeat: 8,
    strategy: "episodes",
    optimizer: defaultOptimizer,
    seed,
    protocolEval: protocol,
    ...options,
  });
  return {
    score: curveArea(result.rewardCurve.map((value, index) => ({ step: index + 1, value }))),
    episodes: result.episodes,
    curve: { rewards: result.rewardCurve, episodesByStep: result.episodesByStep, maxSteps: steps },
    protocol: { score: curveArea(result.protocolCurve), episodes: result.protocolEpisodes, points: result.protocolCurve, maxSteps: steps },
  };
}

export const measurementTopics: KnownAnswerTopic[] = [
  {
    name: "temperature",
    question: "Which sampling temperature of the training rollouts makes item-color's policy best?",
    knob: "temperature",
    values: ["1", "0.5", "0.25"],
    goal: "maximize",
    range: [0, 1],
    equivalence: 0.05,
    earlyStop: halving,
    measurement: "the training reward is sampled at the temperature under test",
    run: (value, seed) => sampledRun({ temperature: Number(value) }, seed),
  },
  {
    name: "top-p",
    question: "Which top_p of the training rollouts makes item-color's policy best?",
    knob: "top_p",
    values: ["1", "0.7", "0.4"],
    goal: "maximize",
    range: [0, 1],
    equivalence: 0.05,
    earlyStop: halving,
    measurement: "the training reward is sampled with the nucleus under test",
    run: (value, seed) => sampledRun({ topP: Number(value) }, seed),
  },
];
