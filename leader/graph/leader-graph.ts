import { Command, END, START, StateGraph } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { appendEventOnce, campaignPaths, leaderDatabaseProblem, readEvents } from "../../campaign/index.ts";
import type { CampaignPaths } from "../../campaign/index.ts";
import { A3rError } from "../../core/errors.ts";
import { openRoundOf, pendingReopen, reopenRefusal } from "../record/reopen.ts";
import { redactingSerializer } from "../record/record-redaction.ts";
import { LeaderState, type LeaderOptions, type LeaderStateValue, type ReviewAnswer, type ReviewRequest } from "./leader-state.ts";
import { createNodeContext } from "./node-context.ts";
import { decideNode, frameNode, planNode } from "./planning-nodes.ts";
import { approveBlueprintsNode, approvePlanNode } from "./review-nodes.ts";
import { auditNode, designNode, gateNode } from "./design-nodes.ts";
import { analyzeNode, dispatchNode, smokeNode, watchNode } from "./run-nodes.ts";
import { reportNode } from "./report-node.ts";

export { LeaderState, type LeaderOptions, type LeaderStateValue, type ReviewAnswer, type ReviewRequest } from "./leader-state.ts";

/**
 * The leader as a LangGraph state machine, checkpointed to `runs/<id>/leader.sqlite`
 * after every node (durability "sync", thread id = campaign id), so a killed leader
 * resumes at the node it was in:
 *
 * frame → plan → approve_plan → design → audit → approve_blueprints → gate → smoke →
 * dispatch → watch → analyze → decide → (plan | report)
 *
 * State is plain JSON (plans, outcomes, blueprint texts), stored redacted
 * (leader/record/record-redaction.ts); files hold the rest. Every node
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
export function buildLeaderGraph(options: LeaderOptions) {
  const context = createNodeContext(options);
  return (
    new StateGraph(LeaderState)
      .addNode("frame", frameNode(context))
      .addNode("plan", planNode(context))
      .addNode("approve_plan", approvePlanNode(context))
      .addNode("design", designNode(context))
      .addNode("audit", auditNode(context))
      .addNode("approve_blueprints", approveBlueprintsNode(context))
      .addNode("gate", gateNode(context))
      .addNode("smoke", smokeNode(context))
      .addNode("dispatch", dispatchNode(context))
      .addNode("watch", watchNode(context))
      .addNode("analyze", analyzeNode(context))
      .addNode("decide", decideNode(context))
      .addNode("report", reportNode(context))
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
  const damaged = await leaderDatabaseProblem(paths.leaderDatabase, paths.events);
  if (damaged !== null) {
    throw new A3rError("LEADER_CHECKPOINT_UNREADABLE", `${paths.leaderDatabase} ${damaged}`, {
      where: paths.leaderDatabase,
      hint: `the events log and result directories are intact: a3r resume ${options.campaignId} --rebuild sets the file aside and replays the campaign into a fresh checkpoint (finished runs are not launched again)`,
    });
  }
  const saver = SqliteSaver.fromConnString(paths.leaderDatabase);
  saver.serde = redactingSerializer(saver.serde);
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
