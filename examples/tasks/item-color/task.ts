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
 * Single-turn: the prompt names an item, the answer must start with the item's colour.
 * Twelve items, six colours; reward 1 when the first word is the colour, else 0. For the
 * embedded policy (about 33 words) chance is about 3%.
 */
export const itemColors: Readonly<Record<string, string>> = {
  apple: "red",
  cherry: "red",
  grass: "green",
  leaf: "green",
  sky: "blue",
  ocean: "blue",
  banana: "yellow",
  lemon: "yellow",
  snow: "white",
  milk: "white",
  coal: "black",
  night: "black",
};
const items = Object.keys(itemColors);

export interface ItemColorTask extends TaskInstance {
  item: string;
}

export function prompt(task: ItemColorTask): TaskMessage[] {
  return [
    { role: "system", content: "You name colours. Answer with one word." },
    { role: "user", content: `What colour is the ${task.item}?` },
  ];
}

export function score(task: ItemColorTask, answer: string): number {
  return firstWord(answer) === itemColors[task.item] ? 1 : 0;
}

async function playEpisode(task: ItemColorTask, ask: AskPolicy): Promise<EpisodeOutcome> {
  const answer = await ask(prompt(task), { maxTokens: 3 });
  const reward = score(task, answer);
  return { reward, isSuccess: reward === 1, logMetrics: { answered_with_a_colour: Object.values(itemColors).includes(firstWord(answer)) ? 1 : 0 } };
}

const task: SwarmTask<ItemColorTask> = {
  name: "item-color",
  description: "Single-turn: name the colour of an item in one word (12 items, 6 colours).",
  sampleTask(seed) {
    const item = items[seededIndex(seed, 0, items.length)]!;
    return { taskId: `item-color-${item}`, item };
  },
  runEpisode: (openai: OpenAI, instance) => playEpisode(instance, askThroughOpenAI(openai)),
  playEpisode,
};

export default task;
