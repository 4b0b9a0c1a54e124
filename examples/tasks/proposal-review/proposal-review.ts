import type OpenAI from "openai";
import { itemColors } from "../item-color/task.ts";
import { askThroughOpenAI, firstWord, seededIndex, type AskPolicy, type EpisodeOutcome, type TaskInstance, type TaskMessage } from "../task-types.ts";

/**
 * Proposal–review with two policies (the paper's non-shared-parameter setting): in each
 * episode a proposer names the colour of an item, then a reviewer, a different policy on
 * its own swarm server, reads the proposal and accepts ("yes") or rejects ("no") it.
 * Each is rewarded on its own role: the proposer when its colour is right, the reviewer
 * when its verdict is right (yes to a right proposal, no to a wrong one).
 *
 * For the embedded policy (33 outputs) chance is about 3 % for both roles. The reviewer's
 * prompt carries the proposal's first word, so what it must learn changes as the proposer
 * learns: at first nearly every proposal is wrong and "no" pays; later it must say "yes"
 * to the right colours. Six items with six different colours keep the prompts few.
 *
 * Not a SwarmTask (that is one policy): task.ts wraps it as a MultiRoleTask, which
 * `a3r swarm client proposal-review --url proposer=URL --url reviewer=URL` runs over the
 * SDK's multi-model helper (client.ts is the same run as a script of its own).
 */
export const roles = ["proposer", "reviewer"] as const;
export type Role = (typeof roles)[number];

export const items = ["apple", "grass", "sky", "banana", "snow", "coal"] as const;

export interface ProposalReviewTask extends TaskInstance {
  item: string;
}

export interface ProposalReviewOutcome {
  proposal: string;
  verdict: string;
  outcomes: Record<Role, EpisodeOutcome>;
}

export function proposerPrompt(task: ProposalReviewTask): TaskMessage[] {
  return [
    { role: "system", content: "You propose colours. Answer with one word." },
    { role: "user", content: `Propose the colour of the ${task.item}.` },
  ];
}

/** The proposal enters the prompt as one word ("nothing" for an empty answer), so an answer cannot grow the prompt. */
export function reviewerPrompt(task: ProposalReviewTask, proposal: string): TaskMessage[] {
  return [
    { role: "system", content: "You review proposals. Answer yes or no." },
    { role: "user", content: `Proposal: the ${task.item} is ${proposal || "nothing"}. Is it right?` },
  ];
}

export function proposalIsRight(task: ProposalReviewTask, proposal: string): boolean {
  return proposal === itemColors[task.item];
}

/** Each role's reward from its own answer: the proposer's colour, the reviewer's verdict on it. */
export function score(task: ProposalReviewTask, proposal: string, verdict: string): Record<Role, EpisodeOutcome> {
  const right = proposalIsRight(task, proposal);
  const verdictIsRight = verdict === (right ? "yes" : "no");
  return {
    proposer: { reward: right ? 1 : 0, isSuccess: right, logMetrics: { accepted: verdict === "yes" ? 1 : 0 } },
    reviewer: {
      reward: verdictIsRight ? 1 : 0,
      isSuccess: verdictIsRight,
      logMetrics: { proposal_right: right ? 1 : 0, answered_yes_or_no: verdict === "yes" || verdict === "no" ? 1 : 0 },
    },
  };
}

/** One episode with one policy call per role (`ask.proposer`, then `ask.reviewer`). */
export async function playEpisode(task: ProposalReviewTask, ask: Readonly<Record<Role, AskPolicy>>): Promise<ProposalReviewOutcome> {
  const proposal = firstWord(await ask.proposer(proposerPrompt(task), { maxTokens: 3 }));
  const verdict = firstWord(await ask.reviewer(reviewerPrompt(task, proposal), { maxTokens: 3 }));
  return { proposal, verdict, outcomes: score(task, proposal, verdict) };
}

/** `playEpisode` with each role's policy behind its own OpenAI client (its own server and episode key). */
export function runEpisode(openai: Readonly<Record<Role, OpenAI>>, task: ProposalReviewTask): Promise<ProposalReviewOutcome> {
  return playEpisode(task, { proposer: askThroughOpenAI(openai.proposer), reviewer: askThroughOpenAI(openai.reviewer) });
}

/**
 * The seed is part of the task id so that each GRPO group holds exactly the episodes the
 * client ran for that seed (num_repeat), whatever the other seeds drew: both servers then
 * see the same groups complete and step together.
 */
export function sampleTask(seed: number): ProposalReviewTask {
  const item = items[seededIndex(seed, 7, items.length)]!;
  return { taskId: `proposal-review-${seed}-${item}`, item };
}
