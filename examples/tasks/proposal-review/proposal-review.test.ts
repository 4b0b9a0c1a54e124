import { describe, expect, it } from "vitest";
import type { AskPolicy, TaskMessage } from "../task-types.ts";
import { items, playEpisode, reviewerPrompt, sampleTask, score, type ProposalReviewTask } from "./proposal-review.ts";

const banana: ProposalReviewTask = { taskId: "proposal-review-banana", item: "banana" };

describe("proposal-review task", () => {
  it("rewards each role on its own answer: the proposer's colour, the reviewer's verdict on it", () => {
    expect(score(banana, "yellow", "yes")).toMatchObject({ proposer: { reward: 1 }, reviewer: { reward: 1 } });
    // A right proposal wrongly rejected: the proposer still earns its reward, the reviewer does not.
    expect(score(banana, "yellow", "no")).toMatchObject({ proposer: { reward: 1, logMetrics: { accepted: 0 } }, reviewer: { reward: 0 } });
    expect(score(banana, "red", "no")).toMatchObject({ proposer: { reward: 0 }, reviewer: { reward: 1, logMetrics: { proposal_right: 0 } } });
    expect(score(banana, "red", "yes")).toMatchObject({ proposer: { reward: 0 }, reviewer: { reward: 0 } });
    expect(score(banana, "red", "maybe").reviewer.logMetrics).toMatchObject({ answered_yes_or_no: 0 });
  });

  it("shows the reviewer the proposal's first word, and 'nothing' for an empty one", async () => {
    const seen: Record<string, TaskMessage[]> = {};
    const scripted =
      (role: string, answer: string): AskPolicy =>
      async (messages) => {
        seen[role] = messages;
        return answer;
      };
    const played = await playEpisode(banana, { proposer: scripted("proposer", "Yellow, surely"), reviewer: scripted("reviewer", "yes.") });
    expect(played).toMatchObject({ proposal: "yellow", verdict: "yes", outcomes: { proposer: { reward: 1 }, reviewer: { reward: 1 } } });
    expect(seen.proposer!.at(-1)!.content).toContain("banana");
    expect(seen.reviewer!.at(-1)!.content).toBe("Proposal: the banana is yellow. Is it right?");
    expect(reviewerPrompt(banana, "").at(-1)!.content).toContain("is nothing.");
  });

  it("samples every item, the same task for the same seed", () => {
    expect(sampleTask(3)).toEqual(sampleTask(3));
    expect(sampleTask(3).taskId).toBe(`proposal-review-3-${sampleTask(3).item}`);
    expect(new Set(Array.from({ length: 200 }, (_, seed) => sampleTask(seed).item))).toEqual(new Set(items));
  });
});
