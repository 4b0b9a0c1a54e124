import { interrupt } from "@langchain/langgraph";
import { readBlueprintFile } from "../../blueprints/index.ts";
import { appendEventOnce, campaignPaths, readEvents } from "../../campaign/index.ts";
import type { CampaignEvent, CampaignPaths } from "../../campaign/index.ts";
import { A3rError } from "../../core/errors.ts";
import type { DispatchItem, LlmAllowance } from "../../hosts/index.ts";
import { ledgerSpending } from "../../campaign/llm-spending.ts";
import { discardUndispatchedStage, gpuHoursUsed, recordedReviewAnswer, reviewWaitMs } from "./graph-steps.ts";
import { memoAnswer } from "../record/stored-answers.ts";
import type { PlannerInput, PlannerStep, ReviewInstruction } from "../domain/planner.ts";
import { llmAllowanceFor } from "../record/run-ledgers.ts";
import { answerKeyIn, openRoundOf, stoppedMs } from "../record/reopen.ts";
import { loadTopic } from "../domain/topic.ts";
import { engineBounds, engineSchemaFor } from "../design/engine-schema.ts";
import { measuredTopic } from "../design/measurement-protocol.ts";
import type { LeaderOptions, LeaderStateValue, ReviewAnswer, ReviewRequest } from "./leader-state.ts";

/**
 * What every node needs besides its state: the campaign's paths and planner, the topic,
 * memoized planner answers, usage for the budgets, and the one way to stop (logged once
 * with its evidence). Built once per graph; the node groups take it as their argument.
 */
export function createNodeContext(options: LeaderOptions) {
  const paths = campaignPaths(options.runsDir, options.campaignId);
  const { planner } = options;
  const writtenTopic = async () => (await loadTopic(paths.topic)).topic;
  // The topic as the campaign compares it: on a fixed protocol when a knob changes how its metric is sampled.
  const topicOf = async () => measuredTopic(await writtenTopic(), options.engineSchemas);
  const enter = async (node: string, state: LeaderStateValue): Promise<void> => {
    await options.onNode?.(node, state);
  };
  // The open round (leader/record/reopen.ts): a re-opened campaign's nodes ask their planner anew.
  const openRound = async () => openRoundOf((await readEvents(paths.events)).events);
  const memo = async <T>(key: string, compute: () => Promise<T>): Promise<T> => memoAnswer(paths, answerKeyIn(key, await openRound()), compute);
  // Wall time counts from framing, less the time reviewers took to answer and the time
  // the campaign lay stopped before it was re-opened.
  const idleMs = (events: CampaignEvent[], startedAtMs: number) => reviewWaitMs(events) + stoppedMs(events, startedAtMs);
  const usageOf = async (state: LeaderStateValue) => ({
    gpuHours: await gpuHoursUsed(paths),
    wallTimeMs:
      state.startedAtMs === null ? 0 : Math.max(0, Date.now() - state.startedAtMs - idleMs((await readEvents(paths.events)).events, state.startedAtMs)),
  });
  const engineOf = async () => engineSchemaFor(options.engineSchemas, await writtenTopic());
  const inputOf = async (state: LeaderStateValue): Promise<PlannerInput> => {
    const topic = await topicOf();
    const engine = await engineOf();
    return {
      topic,
      history: state.history,
      usage: await usageOf(state),
      ...(state.framing === null ? {} : { framing: state.framing }),
      instructions: state.instructions,
      ...(engine ? { engineBounds: engineBounds(engine, Object.keys(topic.knobs)) } : {}),
    };
  };
  /** Every stop goes through here: logged once with its evidence, then the state that leads to the report. */
  const decideStop = async (stage: number, reason: string, explanation: string, evidence: Record<string, unknown> = {}) => {
    await appendEventOnce(paths.events, "campaign.stop_decided", { stage, reason, openRound: await openRound() }, { explanation, ...evidence });
    return { stop: { reason, explanation }, pending: null };
  };
  const recordStop = (step: Extract<PlannerStep, { kind: "stop" }>, stage: number) =>
    decideStop(stage, step.reason, step.explanation, { best: step.best?.configuration.id ?? null, evidence: step.evidence });
  /** A model call refused by the LLM budget stops the campaign cleanly (it still gets its report). */
  const stopOnBudget = async (error: unknown, stage: number) => {
    if (!(error instanceof A3rError && error.code === "LLM_BUDGET_EXCEEDED")) throw error;
    return decideStop(stage, "budget", error.message, { evidence: error.details ?? {} });
  };
  // Each run may spend its share of what is left of the LLM budget where it cannot reach
  // the campaign's ledger (ssh and queue hosts; leader/record/run-ledgers.ts).
  const itemsOf = async (files: string[], stageRuns: number) =>
    dispatchItems(files, paths, llmAllowanceFor((await topicOf()).budgets, await ledgerSpending(paths.ledger), stageRuns));

  /** Pauses for a person when review is on or commands need approval; returns the state update. */
  const review = async (state: LeaderStateValue, at: ReviewRequest["at"], files: string[]): Promise<Partial<LeaderStateValue>> => {
    const topic = await topicOf();
    const plan = state.stagePlan!;
    const commands = at === "blueprints" ? state.unapprovedCommands : [];
    if (!topic.review && commands.length === 0) return {};
    const request: ReviewRequest = {
      stage: plan.stage,
      at,
      round: state.instructions.length,
      files,
      reason: topic.review ? "the topic asks for review" : "the planner's blueprints run commands outside the topic's base experiment and its commands.allow",
      ...(commands.length === 0 ? {} : { commands }),
    };
    await appendEventOnce(paths.events, "review.requested", { stage: request.stage, at, round: request.round }, { files, reason: request.reason, commands });
    const key = { stage: request.stage, at, round: request.round };
    // A leader killed after taking an answer re-runs this node and would ask again (the
    // checkpoint still shows the interrupt): the answer on record is the answer.
    const answer = (await recordedReviewAnswer(paths.events, key)) ?? interrupt<ReviewRequest, ReviewAnswer>(request);
    if (answer.action === "approve") {
      await appendEventOnce(paths.events, "review.approved", key);
      return { unapprovedCommands: [] };
    }
    const instruction: ReviewInstruction = { stage: plan.stage, at, text: answer.text, time: new Date().toISOString() };
    await appendEventOnce(paths.events, "review.instructed", key, { instruction: answer.text });
    // Nothing of the stage has run yet (review comes before gate and dispatch): its files go,
    // and planning starts again with the instruction.
    await discardUndispatchedStage(paths, plan.stage);
    return {
      instructions: [...state.instructions, instruction],
      stagePlan: null,
      pending: null,
      blueprintTexts: [],
      blueprintFiles: [],
      unapprovedCommands: [],
    };
  };

  return { paths, planner, topicOf, enter, openRound, memo, usageOf, inputOf, engineOf, decideStop, recordStop, stopOnBudget, itemsOf, review, options };
}

export type NodeContext = ReturnType<typeof createNodeContext>;

async function dispatchItems(files: string[], paths: CampaignPaths, llmAllowance: LlmAllowance | undefined): Promise<DispatchItem[]> {
  return Promise.all(
    files.map(async (file) => {
      const blueprint = await readBlueprintFile(file);
      return {
        blueprint,
        file,
        campaign: paths.id,
        resultDir: paths.result(blueprint.id),
        eventsFile: paths.events,
        ...(llmAllowance === undefined ? {} : { llmAllowance }),
      };
    }),
  );
}
