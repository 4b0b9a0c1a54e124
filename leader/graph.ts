import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { readBlueprintFile, auditBlueprint } from "../blueprints/index.ts";
import { appendEvent, campaignPaths } from "../campaign/index.ts";
import type { CampaignPaths } from "../campaign/index.ts";
import { writeFileAtomic } from "../core/atomic-file.ts";
import { dispatchBlueprints } from "../hosts/index.ts";
import type { DispatchHost, DispatchItem, DispatchRow } from "../hosts/index.ts";
import { analyzeStage } from "./analyze-stage.ts";
import { renderMinimalReport } from "./minimal-report.ts";
import type { Planner, PlannerStep, StagePlan, StageRecord } from "./planner.ts";
import { writeStagePlan } from "./stage-plan-file.ts";
import { loadTopic } from "./topic.ts";
import { writeStageBlueprints } from "./write-blueprints.ts";

/**
 * The leader as a LangGraph state machine, checkpointed to `runs/<id>/leader.sqlite`
 * after every node (durability "sync", thread id = campaign id), so a killed leader
 * resumes at the node it was in:
 *
 * frame → plan → design → audit → dispatch → watch → analyze → decide → (plan | report)
 *
 * State is plain JSON (plans and outcomes); files hold the rest. Every node may run twice
 * after a crash, so each is idempotent: blueprints are rewritten only with the same text,
 * dispatch asks every host first and never launches a blueprint id twice, watch re-attaches,
 * analysis and report are recomputed from the result directories.
 *
 * Not yet here (see leader/README.md): human review (`interrupt()`), the smoke test before
 * fan-out, the live terminal view, the HTML report, GPU-hour accounting from the ledger.
 */
export const LeaderState = Annotation.Root({
  campaignId: Annotation<string>(),
  /** When the leader first framed the campaign (ms since epoch), for the wall-time budget. */
  startedAtMs: Annotation<number | null>(),
  history: Annotation<StageRecord[]>(),
  /** The stage being designed, dispatched or watched. */
  stagePlan: Annotation<StagePlan | null>(),
  /** The next stage the planner chose in `decide`, not yet written. */
  pending: Annotation<StagePlan | null>(),
  blueprintFiles: Annotation<string[]>(),
  stop: Annotation<{ reason: string; explanation: string } | null>(),
  reportFile: Annotation<string | null>(),
});

export type LeaderStateValue = typeof LeaderState.State;

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
  const topicOf = async () => (await loadTopic(paths.topic)).topic;
  const enter = async (node: string, state: LeaderStateValue): Promise<void> => {
    await options.onNode?.(node, state);
  };
  const usageOf = (state: LeaderStateValue) => ({ gpuHours: 0, wallTimeMs: state.startedAtMs === null ? 0 : Date.now() - state.startedAtMs });
  const recordStop = async (step: Extract<PlannerStep, { kind: "stop" }>, stage: number) => {
    await appendEvent(paths.events, "campaign.stop_decided", { stage, reason: step.reason, explanation: step.explanation, best: step.best?.configuration.id ?? null, evidence: step.evidence });
    return { stop: { reason: step.reason, explanation: step.explanation }, pending: null };
  };

  return new StateGraph(LeaderState)
    .addNode("frame", async (state) => {
      await enter("frame", state);
      const topic = await topicOf();
      await appendEvent(paths.events, "leader.framed", { title: topic.title, planner: options.planner.name, knobs: Object.keys(topic.knobs), seeds: topic.seeds });
      return { startedAtMs: state.startedAtMs ?? Date.now() };
    })
    .addNode("plan", async (state) => {
      await enter("plan", state);
      const topic = await topicOf();
      let plan = state.pending;
      if (plan === null) {
        const step = await options.planner.next({ topic, history: state.history, usage: usageOf(state) });
        if (step.kind === "stop") return recordStop(step, state.history.length + 1);
        plan = step.plan;
      }
      const file = await writeStagePlan(paths, plan, topic.title);
      await appendEvent(paths.events, "stage.planned", { stage: plan.stage, stageKind: plan.kind, plan: file, configurations: plan.configurations.map((item) => item.id), experiments: plan.experiments.length });
      return { stagePlan: plan, pending: null };
    })
    .addNode("design", async (state) => {
      await enter("design", state);
      const written = await writeStageBlueprints(await topicOf(), state.stagePlan!, paths, { rewritePath: options.rewritePath });
      return { blueprintFiles: written.map((item) => item.file) };
    })
    .addNode("audit", async (state) => {
      await enter("audit", state);
      const findings = [];
      for (const file of state.blueprintFiles) findings.push(...auditBlueprint(await readBlueprintFile(file), { file, allowedRoots: [paths.results] }).filter((finding) => finding.severity === "error"));
      if (findings.length === 0) return {};
      const explanation = `stage ${state.stagePlan!.stage}: ${findings.length} blueprint error(s), first: ${findings[0]!.file}:${findings[0]!.line} ${findings[0]!.message}`;
      await appendEvent(paths.events, "stage.audit_failed", { stage: state.stagePlan!.stage, findings: findings.slice(0, 20) });
      return { stop: { reason: "audit-failed", explanation } };
    })
    .addNode("dispatch", async (state) => {
      await enter("dispatch", state);
      const rows = await dispatchBlueprints({ items: await itemsOf(state, paths), hosts: options.hosts, wait: false });
      await appendEvent(paths.events, "stage.dispatched", { stage: state.stagePlan!.stage, runs: rows.map((row) => ({ blueprintId: row.blueprintId, host: row.host, state: row.state, note: row.note })) });
      return {};
    })
    .addNode("watch", async (state) => {
      await enter("watch", state);
      const rows = await dispatchBlueprints({ items: await itemsOf(state, paths), hosts: options.hosts, wait: true, intervalMs: options.intervalMs, onUpdate: options.onUpdate });
      await appendEvent(paths.events, "stage.finished", { stage: state.stagePlan!.stage, runs: rows.map((row) => ({ blueprintId: row.blueprintId, state: row.state, note: row.note })) });
      return {};
    })
    .addNode("analyze", async (state) => {
      await enter("analyze", state);
      const plan = state.stagePlan!;
      const { analysis, file } = await analyzeStage(await topicOf(), plan, state.history, paths);
      await appendEvent(paths.events, "stage.analyzed", { stage: plan.stage, analysis: file, best: analysis.best ?? null, verdicts: analysis.verdicts.map((verdict) => ({ configuration: verdict.configurationId, verdict: verdict.verdict, explanation: verdict.explanation })) });
      return { history: [...state.history, { plan, outcomes: analysis.outcomes }], stagePlan: null, blueprintFiles: [] };
    })
    .addNode("decide", async (state) => {
      await enter("decide", state);
      const step = await options.planner.next({ topic: await topicOf(), history: state.history, usage: usageOf(state) });
      if (step.kind === "stop") return recordStop(step, state.history.length);
      await appendEvent(paths.events, "stage.next_decided", { after: state.history.length, next: step.plan.stage, stageKind: step.plan.kind, rationale: step.plan.rationale });
      return { pending: step.plan };
    })
    .addNode("report", async (state) => {
      await enter("report", state);
      await writeFileAtomic(paths.report, renderMinimalReport(await topicOf(), state.history, state.stop));
      await appendEvent(paths.events, "campaign.reported", { report: paths.report, stages: state.history.length, stop: state.stop });
      return { reportFile: paths.report };
    })
    .addEdge(START, "frame")
    .addEdge("frame", "plan")
    .addConditionalEdges("plan", (state) => (state.stop ? "report" : "design"), ["design", "report"])
    .addEdge("design", "audit")
    .addConditionalEdges("audit", (state) => (state.stop ? "report" : "dispatch"), ["dispatch", "report"])
    .addEdge("dispatch", "watch")
    .addEdge("watch", "analyze")
    .addEdge("analyze", "decide")
    .addConditionalEdges("decide", (state) => (state.stop ? "report" : "plan"), ["plan", "report"])
    .addEdge("report", END);
}

async function itemsOf(state: LeaderStateValue, paths: CampaignPaths): Promise<DispatchItem[]> {
  return Promise.all(
    state.blueprintFiles.map(async (file) => {
      const blueprint = await readBlueprintFile(file);
      return { blueprint, file, campaign: paths.id, resultDir: paths.result(blueprint.id), eventsFile: paths.events };
    }),
  );
}

/**
 * Runs the leader of an existing campaign to its end, or resumes it where its checkpoint
 * stopped; a finished campaign returns its final state without running anything.
 */
export async function runLeader(options: LeaderOptions): Promise<LeaderStateValue> {
  const paths = campaignPaths(options.runsDir, options.campaignId);
  const saver = SqliteSaver.fromConnString(paths.leaderDatabase);
  try {
    const app = buildLeaderGraph(options).compile({ checkpointer: saver });
    const config = { configurable: { thread_id: options.campaignId }, durability: "sync" as const, recursionLimit: 1000 };
    const snapshot = await app.getState(config);
    const started = snapshot.values !== undefined && Object.keys(snapshot.values as object).length > 0;
    if (started && snapshot.next.length === 0) return snapshot.values as LeaderStateValue;
    const initial: LeaderStateValue = { campaignId: options.campaignId, startedAtMs: null, history: [], stagePlan: null, pending: null, blueprintFiles: [], stop: null, reportFile: null };
    return (await app.invoke(started ? null : initial, config)) as LeaderStateValue;
  } finally {
    saver.db.close();
  }
}
