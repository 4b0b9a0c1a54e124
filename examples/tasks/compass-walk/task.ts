import type OpenAI from "openai";
import { askThroughOpenAI, firstWord, seededIndex, type AskPolicy, type EpisodeOutcome, type SwarmTask, type TaskInstance, type TaskMessage } from "../task-types.ts";

/**
 * Multi-turn: the agent starts facing a compass direction and turns right (clockwise) three
 * times, saying after each turn where it faces. Each user turn is appended to the
 * conversation so far, so the episode's calls extend each other and merge into one sample.
 * The follow-up turns do not repeat the heading: the walk continues from where the agent
 * said it faces, so the right answer of a turn depends on the previous answer, which the
 * policy can only read from its own earlier message. An answer that is not a direction ends
 * the walk (the remaining turns count as wrong). Reward: the fraction of turns right.
 *
 * (Left and right turns mixed would need a conjunction of heading and turn word, which the
 * embedded policy learns far too slowly; this task is sized for it.)
 */
export const directions = ["north", "east", "south", "west"] as const;
export type Direction = (typeof directions)[number];
export const turnsPerEpisode = 3;

export interface CompassWalkTask extends TaskInstance {
  start: Direction;
  turns: number;
}

export function turnRight(heading: Direction): Direction {
  return directions[(directions.indexOf(heading) + 1) % 4]!;
}

export function asDirection(word: string): Direction | undefined {
  return (directions as readonly string[]).includes(word) ? (word as Direction) : undefined;
}

export function firstMessages(task: CompassWalkTask): TaskMessage[] {
  return [
    { role: "system", content: "You walk on a compass. Answer with one direction." },
    { role: "user", content: `You face ${task.start}. Turn right. Where do you face?` },
  ];
}

export function followUpMessage(): TaskMessage {
  return { role: "user", content: "Turn right again. Where do you face now?" };
}

/**
 * Per-turn correctness (1/0) and the reward (their mean). Turn k is right when its first word
 * is one step clockwise from the start (k = 0) or from answer k - 1.
 */
export function score(task: CompassWalkTask, answers: readonly string[]): { reward: number; correct: number[] } {
  const correct: number[] = [];
  let heading: Direction | undefined = task.start;
  for (let index = 0; index < task.turns; index++) {
    const said = asDirection(firstWord(answers[index] ?? ""));
    correct.push(heading !== undefined && said === turnRight(heading) ? 1 : 0);
    heading = said;
  }
  return { reward: correct.reduce((sum, value) => sum + value, 0) / task.turns, correct };
}

async function playEpisode(task: CompassWalkTask, ask: AskPolicy): Promise<EpisodeOutcome> {
  const messages = firstMessages(task);
  const answers: string[] = [];
  for (let turnIndex = 0; turnIndex < task.turns; turnIndex++) {
    const answer = await ask([...messages], { maxTokens: 3 });
    answers.push(answer);
    messages.push({ role: "assistant", content: answer });
    if (!asDirection(firstWord(answer))) break;
    if (turnIndex + 1 < task.turns) messages.push(followUpMessage());
  }
  const { reward, correct } = score(task, answers);
  const logMetrics: Record<string, number> = {};
  correct.forEach((value, index) => (logMetrics[`turn_${index + 1}_correct`] = value));
  return { reward, isSuccess: reward === 1, logMetrics };
}

const task: SwarmTask<CompassWalkTask> = {
  name: "compass-walk",
  description: "Multi-turn: turn right three times on a compass and say where you face after each turn.",
  sampleTask(seed) {
    const start = directions[seededIndex(seed, 0, 4)]!;
    return { taskId: `compass-walk-${start}`, start, turns: turnsPerEpisode };
  },
  runEpisode: (openai: OpenAI, instance) => playEpisode(instance, askThroughOpenAI(openai)),
  playEpisode,
};

export default task;
