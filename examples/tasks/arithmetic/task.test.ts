import { describe, expect, it } from "vitest";
import arithmetic, { expected, extractAnswer, score } from "./task.ts";

describe("arithmetic task", () => {
  const task = { taskId: "arithmetic-37p48", left: 37, right: 48, operator: "+" as const };

  it("rewards the exact answer, a wrong but well-formed one a little, and no tags nothing", () => {
    expect(score(task, "37 + 48 is <answer>85</answer>")).toEqual({ reward: 1, formatted: true, correct: true });
    expect(score(task, "<answer>84</answer>").reward).toBe(0.1);
    expect(score(task, "85").reward).toBe(0);
    expect(score(task, "<answer>eighty-five</answer>").reward).toBe(0);
  });

  it("reads the last answer tag, with thousands separators, and refuses unterminated tags", () => {
    expect(extractAnswer("<answer>1</answer> no, <answer>1,234</answer>")).toBe(1234);
    expect(extractAnswer("<answer>12")).toBeUndefined();
    expect(extractAnswer(`<answer>${"9".repeat(100_000)}`)).toBeUndefined();
  });

  it("samples reproducible problems of both kinds with distinct task ids", () => {
    expect(arithmetic.sampleTask(3)).toEqual(arithmetic.sampleTask(3));
    const tasks = Array.from({ length: 400 }, (_, seed) => arithmetic.sampleTask(seed));
    expect(new Set(tasks.map((item) => item.operator))).toEqual(new Set(["+", "*"]));
    expect(new Set(tasks.map((item) => item.taskId)).size).toBeGreaterThan(300);
    for (const item of tasks) expect(Number.isInteger(expected(item))).toBe(true);
  });
});
