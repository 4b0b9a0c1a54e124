import { Annotation, Command, END, START, StateGraph, interrupt } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { readBlueprintFile } from "../../blueprints/index.ts";
import { appendEventOnce, campaignPaths, readEvents } from "../../campaign/index.ts";
import type { CampaignEvent, CampaignPaths } from "../../campaign/index.ts";
import { A3rError } from "../../core/errors.ts";
import { writeFileAtomic } from "../../core/atomic-file.ts";
import { dispatchBlueprints } from "../../hosts/index.ts";
import type { DispatchHost, DispatchItem, DispatchRow, LlmAllowance } from "../../hosts/index.ts";
import { ledgerSpending } from "../../campaign/llm-spending.ts";
import { analyzeStage } from "../analysis/analyze-stage.ts";
import {
  auditBlueprintTexts,
  checkStageBudgets,
  commandsAddedBy,
  discardUndispatchedStage,
  gpuHoursUsed,
  memoAnswer,
  recordedReviewAnswer,
  renderFraming,
  reviewWaitMs,
} from "./graph-steps.ts";
import { writeCampaignReport } from "../report/campaign-report.ts";
import { rankedSummaries } from "../domain/configurations.ts";
import type {
  BlueprintText,
  Conclusion,
  FramedQuestion,
  Planner,
  PlannerInput,
  PlannerStep,
  ReviewInstruction,
  StagePlan,
  StageRecord,
} from "../domain/planner.ts";
import { bookUnbookedGpuHours, importRunLedgers, llmAllowanceFor } from "../record/run-ledgers.ts";
import { answerKeyIn, openRoundOf, pendingReopen, reopenRefusal, stoppedMs } from "../record/reopen.ts";
import { writeStagePlan } from "../record/stage-plan-file.ts";
import { loadTopic } from "../domain/topic.ts";
import { draftStageBlueprints, writeBlueprintTexts } from "../design/write-blueprints.ts";

/**
 * The leader as a LangGraph state machine, checkpointed to `runs/<id>/leader.sqlite`
 * after every node (durability "sync", thread id = campaign id), so a killed leader
 * resumes at the node it was in:
 *
 * frame → plan → approve_plan → design → audit → approve_blueprints → gate → smoke →
 * dispatch → watch → analyze → decide → (plan | report)
 *
 * State is plain JSON (plans, outcomes, blueprint texts); files hold the rest. Every node
 * may run twice after a crash, so each is idempotent: planner answers are memoized in
 * `leader-answers/` (a model asked again could answer differently), blueprints are
 * rewritten only with the same text, events that record a decision are appended once,
 * dispatch asks every host first and never launches a blueprint id twice, watch
 * re-attaches, analysis and report are recomputed from the result directories.
 *
 * Dispatch is one node over the whole stage rather than a `Send` per blueprint: placing
 * runs on hosts needs every run of the stage at once (capacity-aware scheduling), and one
 * call that asks every host first is what makes it idempotent.
 *
 * Review (`interrupt()`) happens after the plan and after the blueprints, with the topic's
 * `review: true`, and also with review off when a planner's blueprints carry commands the
 * topic's base experiment does not (a model's command needs a person before it runs).
 */
export const LeaderState = Annotation.Root({
  campaignId: Annotation<string>(),
  /** When the leader first framed the campaign (ms since epoch), for the wall-time budget. */
  startedAtMs: Annotation<number | null>(),
  framing: Annotation<FramedQuestion | null>(),
  history: Annotation<StageRecord[]>(),
  /** The stage being designed, dispatched or watched. */
  stagePlan: Annotation<StagePlan | null>(),
  /** The next stage the planner chose in `decide`, not yet written. */
  pending: Annotation<StagePlan | null>(),
  /** The stage's blueprints between design and audit (not yet written). */
  blueprintTexts: Annotation<BlueprintText[]>(),
  blueprintFiles: Annotation<string[]>(),
  /** Commands in the stage's blueprints outside the base experiment and the topic's `commands.allow`. */
  unapprovedCommands: Annotation<string[]>(),
  instructions: Annotation<ReviewInstruction[]>(),
  stop: Annotation<{ reason: string; explanation: string } | null>(),
  reportFile: Annotation<string | null>(),
});

export type LeaderStateValue = typeof LeaderState.State;

/** What a paused campaign waits for (the value given to `interrupt()`). */
export interface ReviewRequest {
  stage: number;
  at: "plan" | "blueprints";
  /** How many instructions came before; distinguishes a second review of the same stage. */
  round: number;
  /** What to read before answering. */
  files: string[];
  /** Why review is asked (review on, or commands that need approval). */
  reason: string;
  commands?: string[];
}

export type ReviewAnswer = { action: "approve" } | { action: "instruct"; text: string };

export interface LeaderOptions {
  runsDir: string;
  campaignId: string;
  planner: Planner;
  hosts: DispatchHost[];
  /** Rewrites the topic's paths for this machine (see `examplePathRewriter`). */
  rewritePath?: (text: string) => string;
  /** Poll interval while watching; default 2 s. */
  intervalMs?: number;
  onUpdate?: (rows: DispatchRow[]) => void;
  /** Called as each node starts (tests kill the leader at chosen points with it). */
  onNode?: (node: string, state: LeaderStateValue) => void | Promise<void>;
}

export function buildLeaderGraph(options: LeaderOptions) {
  const paths = campaignPaths(options.runsDir, options.campaignId);
  const { planner } = options;
  const topicOf = async () => (await loadTopic(paths.topic)).topic;
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
  const inputOf = async (state: LeaderStateValue): Promise<PlannerInput> => ({
    topic: await topicOf(),
    history: state.history,
    usage: await usageOf(state),
    ...(state.framing === null ? {} : { framing: state.framing }),
    instructions: state.instructions,
  });
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

  return (
    new StateGraph(LeaderState)
      .addNode("frame", async (state) => {
        await enter("frame", state);
        const topic = await topicOf();
        let framing = state.framing;
        if (planner.frame && framing === null) {
          try {
            framing = await memo("frame", () => planner.frame!(topic));
          } catch (error) {
            return stopOnBudget(error, 0);
          }
          await writeFileAtomic(`${paths.root}/framing.md`, renderFraming(framing, topic.title));
        }
        await appendEventOnce(
          paths.events,
          "leader.framed",
          { planner: planner.name },
          { title: topic.title, knobs: Object.keys(topic.knobs), seeds: topic.seeds, framing },
        );
        return { startedAtMs: state.startedAtMs ?? Date.now(), framing };
      })
      .addNode("plan", async (state) => {
        await enter("plan", state);
        const topic = await topicOf();
        let plan = state.pending;
        if (plan === null) {
          const stage = state.history.length + 1;
          let step: PlannerStep;
          try {
            step = await memo(`plan-${stage}-r${state.instructions.length}`, async () => planner.next(await inputOf(state)));
          } catch (error) {
            return stopOnBudget(error, stage);
          }
          if (step.kind === "stop") return recordStop(step, stage);
          plan = step.plan;
        }
        const file = await writeStagePlan(paths, plan, topic.title);
        await appendEventOnce(
          paths.events,
          "stage.planned",
          { stage: plan.stage, round: state.instructions.length },
          { stageKind: plan.kind, plan: file, configurations: plan.configurations.map((item) => item.id), experiments: plan.experiments.length },
        );
        return { stagePlan: plan, pending: null };
      })
      .addNode("approve_plan", async (state) => {
        await enter("approve_plan", state);
        return review(state, "plan", [paths.stage(state.stagePlan!.stage).plan]);
      })
      .addNode("design", async (state) => {
        await enter("design", state);
        const topic = await topicOf();
        const plan = state.stagePlan!;
        const drafts = draftStageBlueprints(topic, plan, paths, { rewritePath: options.rewritePath });
        if (!planner.writeBlueprints) return { blueprintTexts: drafts };
        try {
          const texts = await memo(`write-${plan.stage}-r${state.instructions.length}`, () =>
            planner.writeBlueprints!({ topic, plan, drafts, instructions: state.instructions }),
          );
          return { blueprintTexts: texts };
        } catch (error) {
          return stopOnBudget(error, plan.stage);
        }
      })
      .addNode("audit", async (state) => {
        await enter("audit", state);
        const topic = await topicOf();
        const plan = state.stagePlan!;
        const expected = plan.experiments.map((experiment) => experiment.blueprintId);
        const drafts = draftStageBlueprints(topic, plan, paths, { rewritePath: options.rewritePath });
        let texts = state.blueprintTexts;
        let findings = auditBlueprintTexts(paths, plan.stage, texts, drafts);
        if (findings.length > 0 && planner.writeBlueprints) {
          // One repair round: the planner sees the findings of its own blueprints.
          await appendEventOnce(
            paths.events,
            "stage.audit_repair_asked",
            { stage: plan.stage, round: state.instructions.length },
            { findings: findings.slice(0, 20) },
          );
          try {
            // The findings' line numbers refer to the planner's own texts, so those are its drafts now.
            const previous = texts;
            texts = await memo(`write-${plan.stage}-r${state.instructions.length}-repair`, () =>
              planner.writeBlueprints!({ topic, plan, drafts: previous, findings, instructions: state.instructions }),
            );
          } catch (error) {
            return stopOnBudget(error, plan.stage);
          }
          findings = auditBlueprintTexts(paths, plan.stage, texts, drafts);
        }
        if (findings.length > 0) {
          // Every finding (up to a bound) goes into the stop, so the report shows them all.
          const shown = findings.slice(0, 10).map((finding) => `${finding.blueprintId}:${finding.line} ${finding.message}`);
          const explanation = `stage ${plan.stage}: ${findings.length} blueprint error(s): ${shown.join("; ")}${findings.length > shown.length ? `; and ${findings.length - shown.length} more in events.jsonl` : ""}`;
          await appendEventOnce(paths.events, "stage.audit_failed", { stage: plan.stage }, { findings: findings.slice(0, 20) });
          for (const id of expected)
            await appendEventOnce(
              paths.events,
              "blueprint.skipped",
              { blueprintId: id },
              { stage: plan.stage, reason: "its stage's blueprints failed the audit" },
            );
          return { ...(await decideStop(plan.stage, "audit-failed", explanation)), blueprintTexts: [] };
        }
        const files = await writeBlueprintTexts(paths, plan.stage, texts);
        return { blueprintFiles: files, blueprintTexts: [], unapprovedCommands: commandsAddedBy(drafts, texts, topic.commands.allow) };
      })
      .addNode("approve_blueprints", async (state) => {
        await enter("approve_blueprints", state);
        return review(state, "blueprints", state.blueprintFiles);
      })
      .addNode("gate", async (state) => {
        // Budgets are enforced before anything of the stage runs, whatever the planner said.
        await enter("gate", state);
        const topic = await topicOf();
        const plan = state.stagePlan!;
        const refusal = checkStageBudgets(topic, plan, state.history, await usageOf(state));
        if (refusal === null) return {};
        for (const experiment of plan.experiments)
          await appendEventOnce(
            paths.events,
            "blueprint.skipped",
            { blueprintId: experiment.blueprintId },
            { stage: plan.stage, reason: `not run: ${refusal.explanation}` },
          );
        return decideStop(plan.stage, "budget", refusal.explanation, { evidence: refusal.evidence });
      })
      .addNode("smoke", async (state) => {
        // The campaign's first blueprint runs alone until its first training signal: a base
        // experiment that cannot start fails once, not on every slot. It keeps running after.
        await enter("smoke", state);
        const plan = state.stagePlan!;
        if (state.history.length > 0 || state.blueprintFiles.length === 0) return {};
        const first = await itemsOf(state.blueprintFiles.slice(0, 1), state.blueprintFiles.length);
        const signalled = new AbortController();
        const [row] = await dispatchBlueprints({
          items: first,
          hosts: options.hosts,
          wait: true,
          intervalMs: options.intervalMs,
          signal: signalled.signal,
          onUpdate: (rows) => {
            options.onUpdate?.(rows);
            if (rows[0]!.step !== null || rows[0]!.lastMetrics !== null) signalled.abort();
          },
        });
        const failed =
          row!.state === "launch_failed" || row!.state === "unschedulable" || row!.state === "lost" || (row!.finished && row!.state !== "succeeded");
        if (!failed) {
          await appendEventOnce(
            paths.events,
            "stage.smoke_passed",
            { stage: plan.stage, blueprintId: row!.blueprintId },
            { step: row!.step, state: row!.state },
          );
          return {};
        }
        const explanation = `smoke test: ${row!.blueprintId} ${row!.state} before its first training signal (${row!.note}); the stage's other runs were not started`;
        await appendEventOnce(paths.events, "stage.smoke_failed", { stage: plan.stage, blueprintId: row!.blueprintId }, { state: row!.state, note: row!.note });
        for (const experiment of plan.experiments.slice(1))
          await appendEventOnce(
            paths.events,
            "blueprint.skipped",
            { blueprintId: experiment.blueprintId },
            { stage: plan.stage, reason: `not run: the smoke test (${row!.blueprintId}) failed` },
          );
        return decideStop(plan.stage, "stage-failed", explanation);
      })
      .addNode("dispatch", async (state) => {
        await enter("dispatch", state);
        const rows = await dispatchBlueprints({ items: await itemsOf(state.blueprintFiles, state.blueprintFiles.length), hosts: options.hosts, wait: false });
        await appendEventOnce(
          paths.events,
          "stage.dispatched",
          { stage: state.stagePlan!.stage },
          { runs: rows.map((row) => ({ blueprintId: row.blueprintId, host: row.host, state: row.state, note: row.note })) },
        );
        return {};
      })
      .addNode("watch", async (state) => {
        await enter("watch", state);
        const rows = await dispatchBlueprints({
          items: await itemsOf(state.blueprintFiles, state.blueprintFiles.length),
          hosts: options.hosts,
          wait: true,
          intervalMs: options.intervalMs,
          onUpdate: options.onUpdate,
        });
        await appendEventOnce(
          paths.events,
          "stage.finished",
          { stage: state.stagePlan!.stage },
          { runs: rows.map((row) => ({ blueprintId: row.blueprintId, state: row.state, note: row.note })) },
        );
        return {};
      })
      .addNode("analyze", async (state) => {
        await enter("analyze", state);
        const plan = state.stagePlan!;
        // Costs booked by workers away from the campaign's ledger first, so that their own
        // GPU-hours are the ones counted; runs that booked none are estimated after.
        const imported = await importRunLedgers(
          paths,
          plan.experiments.map((experiment) => experiment.blueprintId),
        );
        if (imported.length > 0)
          await appendEventOnce(
            paths.events,
            "stage.run_ledgers_imported",
            { stage: plan.stage },
            { blueprintIds: imported, source: "results/<id>/ledger.jsonl of runs whose worker could not reach the campaign ledger" },
          );
        const booked = await bookUnbookedGpuHours(paths, state.blueprintFiles);
        if (booked.length > 0)
          await appendEventOnce(
            paths.events,
            "stage.gpu_hours_booked",
            { stage: plan.stage },
            { blueprintIds: booked, source: "status.json of runs whose worker could not reach the campaign ledger" },
          );
        const { analysis, file } = await analyzeStage(await topicOf(), plan, state.history, paths);
        await appendEventOnce(
          paths.events,
          "stage.analyzed",
          { stage: plan.stage },
          {
            analysis: file,
            best: analysis.best ?? null,
            verdicts: analysis.verdicts.map((verdict) => ({
              configuration: verdict.configurationId,
              verdict: verdict.verdict,
              explanation: verdict.explanation,
            })),
          },
        );
        return { history: [...state.history, { plan, outcomes: analysis.outcomes }], stagePlan: null, blueprintFiles: [] };
      })
      .addNode("decide", async (state) => {
        await enter("decide", state);
        const after = state.history.length;
        let step: PlannerStep;
        try {
          step = await memo(`decide-${after}-r${state.instructions.length}`, async () => planner.next(await inputOf(state)));
        } catch (error) {
          return stopOnBudget(error, after);
        }
        if (step.kind === "stop") return recordStop(step, after);
        await appendEventOnce(
          paths.events,
          "stage.next_decided",
          { after },
          { next: step.plan.stage, stageKind: step.plan.kind, rationale: step.plan.rationale },
        );
        return { pending: step.plan };
      })
      .addNode("report", async (state) => {
        await enter("report", state);
        const topic = await topicOf();
        let conclusion: Conclusion | undefined;
        if (planner.conclude && state.history.length > 0) {
          const summaries = rankedSummaries(state.history, topic.metric?.goal ?? "maximize");
          try {
            conclusion = await memo("conclude", () =>
              planner.conclude!({ topic, ...(state.framing === null ? {} : { framing: state.framing }), history: state.history, stop: state.stop, summaries }),
            );
          } catch (error) {
            // The report is written from the computed figures anyway; a refused or unusable
            // interpretation is recorded, never a reason to leave the campaign without a report.
            if (!(error instanceof A3rError && ["LLM_BUDGET_EXCEEDED", "PLANNER_OUTPUT_INVALID", "LLM_OUTPUT_INVALID"].includes(error.code))) throw error;
            await appendEventOnce(paths.events, "report.conclusion_skipped", {}, { code: error.code, reason: error.message });
          }
        }
        await writeCampaignReport({
          paths,
          topic,
          history: state.history,
          stop: state.stop,
          ...(state.framing === null ? {} : { framing: state.framing }),
          ...(conclusion ? { conclusion } : {}),
        });
        await appendEventOnce(
          paths.events,
          "campaign.reported",
          { openRound: await openRound() },
          { report: paths.report, html: paths.reportHtml, stages: state.history.length, stop: state.stop },
        );
        return { reportFile: paths.report };
      })
      .addEdge(START, "frame")
      .addConditionalEdges("frame", (state) => (state.stop ? "report" : "plan"), ["plan", "report"])
      .addConditionalEdges("plan", (state) => (state.stop ? "report" : "approve_plan"), ["approve_plan", "report"])
      .addConditionalEdges("approve_plan", (state) => (state.stagePlan === null ? "plan" : "design"), ["plan", "design"])
      .addConditionalEdges("design", (state) => (state.stop ? "report" : "audit"), ["audit", "report"])
      .addConditionalEdges("audit", (state) => (state.stop ? "report" : "approve_blueprints"), ["approve_blueprints", "report"])
      .addConditionalEdges("approve_blueprints", (state) => (state.stagePlan === null ? "plan" : "gate"), ["plan", "gate"])
      .addConditionalEdges("gate", (state) => (state.stop ? "report" : "smoke"), ["smoke", "report"])
      // A failed smoke test still goes through analysis: the stage's failure is on record there.
      .addConditionalEdges("smoke", (state) => (state.stop ? "analyze" : "dispatch"), ["dispatch", "analyze"])
      .addEdge("dispatch", "watch")
      .addEdge("watch", "analyze")
      .addConditionalEdges("analyze", (state) => (state.stop ? "report" : "decide"), ["decide", "report"])
      .addConditionalEdges("decide", (state) => (state.stop ? "report" : "plan"), ["plan", "report"])
      .addEdge("report", END)
  );
}

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

export interface LeaderRun {
  state: LeaderStateValue;
  /** Set when the campaign is paused for review; answer it with `runLeader({ answer })`. */
  waitingFor: ReviewRequest | null;
}

/**
 * Runs the leader of an existing campaign to its end or to its next review, or resumes it
 * where its checkpoint stopped; a finished campaign returns its final state without
 * running anything. A paused campaign is only continued with an `answer`; an answer to a
 * campaign that waits for none is refused (REVIEW_NOT_PENDING). With `reopen`, a campaign
 * that stopped on a budget goes on from the node that stopped it (leader/record/reopen.ts).
 */
export async function runLeader(options: LeaderOptions & { answer?: ReviewAnswer; reopen?: boolean }): Promise<LeaderRun> {
  const paths = campaignPaths(options.runsDir, options.campaignId);
  const saver = SqliteSaver.fromConnString(paths.leaderDatabase);
  try {
    const app = buildLeaderGraph(options).compile({ checkpointer: saver });
    const config = { configurable: { thread_id: options.campaignId }, durability: "sync" as const, recursionLimit: 1000 };
    const waitingIn = async () => {
      const snapshot = await app.getState(config);
      const request = snapshot.tasks.flatMap((task) => task.interrupts).at(0)?.value as ReviewRequest | undefined;
      return { snapshot, request: request ?? null };
    };
    const { snapshot, request } = await waitingIn();
    const started = snapshot.values !== undefined && Object.keys(snapshot.values as object).length > 0;
    if (options.answer !== undefined && request === null) {
      throw new A3rError("REVIEW_NOT_PENDING", `campaign ${options.campaignId} is not waiting for review`, {
        where: options.campaignId,
        hint: `see what it is doing with: a3r status ${options.campaignId}; continue it with a3r resume ${options.campaignId} (without --approve or --instruct)`,
      });
    }
    if (request !== null && options.answer === undefined && !options.reopen) return { state: snapshot.values as LeaderStateValue, waitingFor: request };
    // Finished means nothing left at all: a node whose writes were saved but whose checkpoint
    // was not (killed in between) is out of `next` yet still among the tasks.
    const finished = started && snapshot.next.length === 0 && snapshot.tasks.length === 0;
    if (options.reopen) await recordReopening(app, config, paths, snapshot, finished);
    if (finished) {
      // A re-opening on record (this call's, or one a crash cut short) forks the graph just
      // before the node that decided the stop; otherwise there is nothing left to do.
      const reopening = pendingReopen((await readEvents(paths.events)).events);
      if (reopening === null) return { state: snapshot.values as LeaderStateValue, waitingFor: null };
      await app.invoke(null, { ...config, configurable: { ...config.configurable, checkpoint_id: reopening.checkpointId } });
      const after = await waitingIn();
      return { state: after.snapshot.values as LeaderStateValue, waitingFor: after.request };
    }
    const initial: LeaderStateValue = {
      campaignId: options.campaignId,
      startedAtMs: null,
      framing: null,
      history: [],
      stagePlan: null,
      pending: null,
      blueprintTexts: [],
      blueprintFiles: [],
      unapprovedCommands: [],
      instructions: [],
      stop: null,
      reportFile: null,
    };
    const input = request !== null ? new Command({ resume: options.answer }) : started ? null : initial;
    await app.invoke(input as Parameters<typeof app.invoke>[0], config);
    const after = await waitingIn();
    return { state: after.snapshot.values as LeaderStateValue, waitingFor: after.request };
  } finally {
    saver.db.close();
  }
}

type LeaderApp = ReturnType<ReturnType<typeof buildLeaderGraph>["compile"]>;
type LeaderSnapshot = Awaited<ReturnType<LeaderApp["getState"]>>;

/**
 * Logs the re-opening of a finished, budget-stopped campaign: the fork point is the
 * checkpoint just before the node that decided the stop, found by walking back along the
 * current branch (an earlier re-opening left other branches in the same thread). A
 * re-opening already on record and not yet run is left as it is (a retry after a crash).
 */
async function recordReopening(
  app: LeaderApp,
  config: { configurable: { thread_id: string } },
  paths: CampaignPaths,
  snapshot: LeaderSnapshot,
  finished: boolean,
): Promise<void> {
  const { events } = await readEvents(paths.events);
  if (pendingReopen(events) !== null) return;
  const state = snapshot.values as LeaderStateValue;
  const id = paths.id;
  if (!finished) {
    throw new A3rError("CAMPAIGN_NOT_REOPENABLE", `campaign ${id} has not finished: there is nothing to re-open`, {
      where: id,
      hint: `continue it with: a3r resume ${id}${state.stop === null ? "" : " (it is on its way to its report)"}`,
    });
  }
  const refusal = reopenRefusal(state.stop);
  if (refusal !== null) {
    throw new A3rError("CAMPAIGN_NOT_REOPENABLE", `campaign ${id} cannot be re-opened: ${refusal}`, {
      where: paths.events,
      hint: "start a new campaign from its topic (a3r research <topic> --campaign <new id>) to look further",
    });
  }
  let current: LeaderSnapshot | undefined = snapshot;
  while (current !== undefined && (current.values as LeaderStateValue).stop !== null) {
    current = current.parentConfig ? await app.getState(current.parentConfig as typeof config) : undefined;
  }
  const checkpoint = current?.config.configurable?.checkpoint_id;
  if (current === undefined || typeof checkpoint !== "string" || current.next.length === 0) {
    throw new A3rError("CAMPAIGN_NOT_REOPENABLE", `campaign ${id}: no step before its stop is left in ${paths.leaderDatabase}`, {
      where: paths.leaderDatabase,
      hint: "start a new campaign from its topic",
    });
  }
  const openRound = openRoundOf(events) + 1;
  await appendEventOnce(paths.events, "campaign.reopened", { openRound }, { checkpoint, at: current.next, after: state.stop });
}
