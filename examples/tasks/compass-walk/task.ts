import type OpenAI from "openai";
import {
  askThroughOpenAI,
  firstWord,
  seededIndex,
  type AskPolicy,
  type EpisodeOutcome,
  type SwarmTask,
  type TaskInstance,
  type TaskMessage,
} from "../task-types.ts";

/**
 * Multi-turn: the agent starts facing a compass direction and is told three times to turn
 * left or right, saying after each turn where it faces. Each user turn is appended to the
 * conversation so far, so the episode's calls extend each other and merge into one sample.
 * The follow-up turns do not repeat the heading: the walk continues from where the agent
 * said it faces, so the right answer of a turn depends on the previous answer (which the
 * policy can only read from its own earlier message) and on the new instruction. An answer
 * that is not a direction ends the walk (the remaining turns count as wrong). Reward: the
 * fraction of turns answered right. 4 starts x 8 turn sequences = 32 task ids.
 */
export const directions = ["north", "east", "south", "west"] as const;
export type Direction = (typeof directions)[number];
export type Turn = "left" | "right";
export const turnsPerEpisode = 3;

export interface CompassWalkTask extends TaskInstance {
  start: Direction;
  turns: Turn[];
}

export function turnFrom(heading: Direction, turn: Turn): Direction {
  return directions[(directions.indexOf(heading) + (turn === "right" ? 1 : 3)) % 4]!;
}

export function asDirection(word: string): Direction | undefined {
  return (directions as readonly string[]).includes(word) ? (word as Direction) : undefined;
}

export function firstMessages(task: CompassWalkTask): TaskMessage[] {
  return [
    { role: "system", content: "You walk on a compass. Answer with one direction." },
    { role: "user", content: `You face ${task.start}. Turn ${task.turns[0]}. Where do you face?` },
  ];
}

/** The user message of turn `turnIndex` >= 1; it never repeats the heading. */
export function followUpMessage(task: CompassWalkTask, turnIndex: number): TaskMessage {
  return { role: "user", content: `Now turn ${task.turns[turnIndex]}. Where do you face now?` };
}

/**
 * Per-turn correctness (1/0) and the reward (their mean). Turn k is right when its first word
 * is the heading reached by turning from the start (k = 0) or from answer k - 1.
 */
export function score(task: CompassWalkTask, answers: readonly string[]): { reward: number; correct: number[] } {
  const correct: number[] = [];
  let heading: Direction | undefined = task.start;
  task.turns.forEach((turn, index) => {
    const said = asDirection(firstWord(answers[index] ?? ""));
    correct.push(heading !== undefined && said === turnFrom(heading, turn) ? 1 : 0);
    heading = said;
  });
  return { reward: correct.reduce((sum, value) => sum + value, 0) / task.turns.length, correct };
}

async function playEpisode(task: CompassWalkTask, ask: AskPolicy): Promise<EpisodeOutcome> {
  const messages = firstMessages(task);
  const answers: string[] = [];
  for (let turnIndex = 0; turnIndex < task.turns.length; turnIndex++) {
    const answer = await ask([...messages], { maxTokens: 3 });
    answers.push(answer);
    messages.push({ role: "assistant", content: answer });
    if (!asDirection(firstWord(answer))) break;
    if (turnIndex + 1 < task.turns.length) messages.push(followUpMessage(task, turnIndex + 1));
  }
  const { reward, correct } = score(task, answers);
  const logMetrics: Record<string, number> = {};
  correct.forEach((value, index) => (logMetrics[`turn_${index + 1}_correct`] = value));
  return { reward, isSuccess: reward === 1, logMetrics };
}

const task: SwarmTask<CompassWalkTask> = {
  name: "compass-walk",
  description: "Multi-turn: turn left or right three times on a compass and say where you face after each turn.",
  sampleTask(seed) {
    const start = directions[seededIndex(seed, 0, 4)]!;
    const turns = Array.from({ length: turnsPerEpisode }, (_, index): Turn => (seededIndex(seed, index + 1, 2) === 0 ? "left" : "right"));
    return { taskId: `compass-walk-${start}-${turns.join("-")}`, start, turns };
  },
  runEpisode: (openai: OpenAI, instance) => playEpisode(instance, askThroughOpenAI(openai)),
  playEpisode,
};

export default task;
