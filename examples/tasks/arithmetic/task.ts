import type OpenAI from "openai";
import { type AskPolicy, askThroughOpenAI, type EpisodeOutcome, type SwarmTask, seededIndex, type TaskInstance, type TaskMessage } from "../task-types.ts";

/**
 * Single-turn multi-digit arithmetic for real language models (Qwen2.5-0.5B/1.5B-Instruct
 * class): add or multiply two numbers and put the result in <answer></answer>. Problems
 * come from a local generator (no data set to download); reward 1 for the exact answer,
 * 0.1 for a well-formed but wrong answer (the format reward that gets a fresh model to
 * use the tags), 0 otherwise.
 */
export interface ArithmeticTask extends TaskInstance {
  left: number;
  right: number;
  operator: "+" | "*";
}

export function prompt(task: ArithmeticTask): TaskMessage[] {
  return [
    { role: "system", content: "You are a careful calculator. Think briefly, then give the result as <answer>NUMBER</answer>." },
    { role: "user", content: `What is ${task.left} ${task.operator} ${task.right}?` },
  ];
}

export function expected(task: ArithmeticTask): number {
  return task.operator === "+" ? task.left + task.right : task.left * task.right;
}

/** The number inside the last <answer> tag, or undefined when there is none (linear scan, no backtracking). */
export function extractAnswer(text: string): number | undefined {
  const start = text.lastIndexOf("<answer>");
  if (start === -1) return undefined;
  const end = text.indexOf("</answer>", start);
  if (end === -1) return undefined;
  const inner = text
    .slice(start + "<answer>".length, end)
    .trim()
    .replaceAll(",", "");
  return /^-?\d{1,12}$/.test(inner) ? Number(inner) : undefined;
}

export function score(task: ArithmeticTask, answer: string): { reward: number; formatted: boolean; correct: boolean } {
  const value = extractAnswer(answer);
  const correct = value === expected(task);
  return { reward: correct ? 1 : value === undefined ? 0 : 0.1, formatted: value !== undefined, correct };
}

async function playEpisode(task: ArithmeticTask, ask: AskPolicy): Promise<EpisodeOutcome> {
  const answer = await ask(prompt(task), { maxTokens: 256 });
  const { reward, formatted, correct } = score(task, answer);
  return { reward, isSuccess: correct, logMetrics: { formatted: formatted ? 1 : 0, correct: correct ? 1 : 0 } };
}

const task: SwarmTask<ArithmeticTask> = {
  name: "arithmetic",
  description: "Single-turn: add two 2-4 digit numbers or multiply a 2-digit by a 1-digit number; answer in <answer></answer>.",
  sampleTask(seed) {
    const multiply = seededIndex(seed, 0, 4) === 0;
    const digits = 2 + seededIndex(seed, 1, 3);
    const left = multiply ? 10 + seededIndex(seed, 2, 90) : 10 ** (digits - 1) + seededIndex(seed, 2, 9 * 10 ** (digits - 1));
    const right = multiply ? 2 + seededIndex(seed, 3, 8) : 10 ** (digits - 1) + seededIndex(seed, 3, 9 * 10 ** (digits - 1));
    const operator = multiply ? "*" : "+";
    return { taskId: `arithmetic-${left}${operator === "+" ? "p" : "x"}${right}`, left, right, operator };
  },
  runEpisode: (openai: OpenAI, instance) => playEpisode(instance, askThroughOpenAI(openai)),
  playEpisode,
};

export default task;
