import { describe, expect, it } from "vitest";
import compassWalk, { score as scoreWalk, type CompassWalkTask } from "./compass-walk/task.ts";
import itemColor, { score as scoreColor, prompt as colorPrompt } from "./item-color/task.ts";
import type { TaskMessage } from "./task-types.ts";

describe("item-color task", () => {
  it("scores the first word against the item's colour", () => {
    const task = { taskId: "item-color-banana", item: "banana" };
    expect(scoreColor(task, "Yellow, obviously.")).toBe(1);
    expect(scoreColor(task, "it is yellow")).toBe(0);
    expect(colorPrompt(task).at(-1)!.content).toContain("banana");
  });

  it("samples the same task for the same seed and covers every item", () => {
    expect(itemColor.sampleTask(5)).toEqual(itemColor.sampleTask(5));
    const ids = new Set(Array.from({ length: 300 }, (_, seed) => itemColor.sampleTask(seed).taskId));
    expect(ids.size).toBe(12);
  });
});

describe("compass-walk task", () => {
  const task: CompassWalkTask = { taskId: "compass-walk-north-right-right-left", start: "north", turns: ["right", "right", "left"] };

  it("continues the walk from what the agent said, so later turns depend on earlier answers", () => {
    expect(scoreWalk(task, ["east", "south", "east"])).toEqual({ reward: 1, correct: [1, 1, 1] });
    // Wrong first answer, but the next two turns are right from what it said: credited.
    expect(scoreWalk(task, ["west", "north", "west"])).toEqual({ reward: 2 / 3, correct: [0, 1, 1] });
    expect(scoreWalk(task, ["east", "banana", "north"]).correct).toEqual([1, 0, 0]);
  });

  it("samples 32 distinct tasks, the same one for the same seed", () => {
    expect(compassWalk.sampleTask(8)).toEqual(compassWalk.sampleTask(8));
    expect(new Set(Array.from({ length: 2000 }, (_, seed) => compassWalk.sampleTask(seed).taskId)).size).toBe(32);
  });

  it("plays turns whose conversations extend each other, and stops when the answer is not a direction", async () => {
    const seen: TaskMessage[][] = [];
    const answers = ["east", "south", "east"];
    const outcome = await compassWalk.playEpisode(task, async (messages) => {
      seen.push(messages);
      return answers[seen.length - 1]!;
    });
    expect(outcome).toMatchObject({ reward: 1, isSuccess: true });
    expect(seen.map((messages) => messages.length)).toEqual([2, 4, 6]);
    expect(seen[2]!.slice(0, 5)).toEqual([...seen[1]!, { role: "assistant", content: "south" }]);
    expect(seen[1]![2]).toEqual({ role: "assistant", content: "east" });
    expect(seen[2]![5]!.content).toContain("left");

    let calls = 0;
    const stopped = await compassWalk.playEpisode(task, async () => (calls++, "banana"));
    expect(calls).toBe(1);
    expect(stopped.reward).toBe(0);
  });
});
