import { appendEventOnce } from "../../campaign/index.ts";
import { reuseFinishedRuns } from "../history/reuse-finished-runs.ts";
import { dispatchBlueprints, type DispatchItem } from "../../hosts/index.ts";
import { analyzeStage } from "../analysis/analyze-stage.ts";
import { bookUnbookedGpuHours, importRunLedgers } from "../record/run-ledgers.ts";
import { createEarlyStopper } from "./early-stopping.ts";
import type { NodeContext } from "./node-context.ts";
import type { LeaderStateValue } from "./leader-state.ts";

/** Running a stage: the smoke test, dispatch, watching, and the analysis of what came back. Wiring: leader-graph.ts. */

/** The items still to run: those an earlier campaign already ran (same identity) get its result instead. */
async function notYetRun(context: NodeContext, items: DispatchItem[]): Promise<{ items: DispatchItem[]; reused: string[] }> {
  const { paths, topicOf } = context;
  const { toDispatch, reused } = await reuseFinishedRuns(items, {
    campaignRoot: paths.root,
    campaignId: paths.id,
    eventsFile: paths.events,
    ledgerFile: paths.ledger,
    enabled: (await topicOf()).reuse,
  });
  return { items: toDispatch, reused };
}

export function smokeNode(context: NodeContext) {
  const { paths, enter, decideStop, itemsOf, options } = context;
  return async (state: LeaderStateValue): Promise<Partial<LeaderStateValue>> => {
    // The campaign's first blueprint runs alone until its first training signal: a base
    // experiment that cannot start fails once, not on every slot. It keeps running after.
    await enter("smoke", state);
    const plan = state.stagePlan!;
    if (state.history.length > 0 || state.blueprintFiles.length === 0) return {};
    const { items: first, reused } = await notYetRun(context, await itemsOf(state.blueprintFiles.slice(0, 1), state.blueprintFiles.length));
    if (first.length === 0) {
      // The first blueprint's run was taken from an earlier campaign: the base experiment has trained before.
      await appendEventOnce(paths.events, "stage.smoke_passed", { stage: plan.stage, blueprintId: reused[0]! }, { state: "succeeded", reused: true });
      return {};
    }
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
    const failed = row!.state === "launch_failed" || row!.state === "unschedulable" || row!.state === "lost" || (row!.finished && row!.state !== "succeeded");
    if (!failed) {
      await appendEventOnce(paths.events, "stage.smoke_passed", { stage: plan.stage, blueprintId: row!.blueprintId }, { step: row!.step, state: row!.state });
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
  };
}

export function dispatchNode(context: NodeContext) {
  const { paths, enter, itemsOf, options } = context;
  return async (state: LeaderStateValue): Promise<Partial<LeaderStateValue>> => {
    await enter("dispatch", state);
    const { items } = await notYetRun(context, await itemsOf(state.blueprintFiles, state.blueprintFiles.length));
    const rows = await dispatchBlueprints({ items, hosts: options.hosts, wait: false });
    await appendEventOnce(
      paths.events,
      "stage.dispatched",
      { stage: state.stagePlan!.stage },
      { runs: rows.map((row) => ({ blueprintId: row.blueprintId, host: row.host, state: row.state, note: row.note })) },
    );
    return {};
  };
}

export function watchNode(context: NodeContext) {
  const { paths, enter, itemsOf, options, topicOf } = context;
  return async (state: LeaderStateValue): Promise<Partial<LeaderStateValue>> => {
    await enter("watch", state);
    const { items, reused } = await notYetRun(context, await itemsOf(state.blueprintFiles, state.blueprintFiles.length));
    // The topic's early stopping (if it opts in) acts between the dispatcher's rounds.
    const earlyStop = await createEarlyStopper({ topic: await topicOf(), plan: state.stagePlan!, items, hosts: options.hosts, eventsFile: paths.events });
    const rows = await dispatchBlueprints({
      items,
      hosts: options.hosts,
      wait: true,
      intervalMs: options.intervalMs,
      onUpdate: options.onUpdate,
      ...(earlyStop ? { afterRound: earlyStop } : {}),
    });
    await appendEventOnce(
      paths.events,
      "stage.finished",
      { stage: state.stagePlan!.stage },
      {
        runs: [
          ...rows.map((row) => ({ blueprintId: row.blueprintId, state: row.state, note: row.note })),
          ...reused.map((blueprintId) => ({ blueprintId, state: "succeeded", note: "reused from an earlier campaign (run.reused)" })),
        ],
      },
    );
    return {};
  };
}

export function analyzeNode(context: NodeContext) {
  const { paths, topicOf, enter } = context;
  return async (state: LeaderStateValue): Promise<Partial<LeaderStateValue>> => {
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
  };
}
