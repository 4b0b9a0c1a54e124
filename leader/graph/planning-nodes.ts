import { appendEventOnce } from "../../campaign/index.ts";
import { writeRedactedFile } from "../../core/redact.ts";
import { renderFraming } from "./graph-steps.ts";
import type { PlannerStep } from "../domain/planner.ts";
import { writeStagePlan } from "../record/stage-plan-file.ts";
import { refuseOutOfRange } from "../design/refuse-configurations.ts";
import type { NodeContext } from "./node-context.ts";
import type { LeaderStateValue } from "./leader-state.ts";

/** Planning: framing the question, planning a stage, deciding what comes after one. Wiring: leader-graph.ts. */

export function frameNode(context: NodeContext) {
  const { paths, planner, topicOf, enter, memo, stopOnBudget } = context;
  return async (state: LeaderStateValue): Promise<Partial<LeaderStateValue>> => {
    await enter("frame", state);
    const topic = await topicOf();
    let framing = state.framing;
    if (planner.frame && framing === null) {
      try {
        framing = await memo("frame", () => planner.frame!(topic));
      } catch (error) {
        return stopOnBudget(error, 0);
      }
      await writeRedactedFile(`${paths.root}/framing.md`, renderFraming(framing, topic.title));
    }
    await appendEventOnce(
      paths.events,
      "leader.framed",
      { planner: planner.name },
      { title: topic.title, knobs: Object.keys(topic.knobs), seeds: topic.seeds, framing },
    );
    return { startedAtMs: state.startedAtMs ?? Date.now(), framing };
  };
}

export function planNode(context: NodeContext) {
  const { paths, planner, topicOf, enter, memo, inputOf, recordStop, stopOnBudget, decideStop, engineOf } = context;
  return async (state: LeaderStateValue): Promise<Partial<LeaderStateValue>> => {
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
    // A configuration the engine would refuse is dropped with its reason; the rest of the stage goes on.
    const refusal = refuseOutOfRange(plan, topic, await engineOf());
    plan = refusal.plan;
    for (const item of refusal.refused)
      await appendEventOnce(
        paths.events,
        "configuration.refused",
        { stage: plan.stage, configurationId: item.configurationId, round: state.instructions.length },
        { settings: item.settings, reasons: item.reasons },
      );
    const file = await writeStagePlan(paths, plan, topic.title);
    const unanswerable = refusal.refused.length > 0 && plan.configurations.length < (state.history.length === 0 ? 2 : 1);
    if (unanswerable) {
      const explanation = `stage ${plan.stage}: ${refusal.refused.map((item) => `${item.configurationId} refused (${item.reasons.join("; ")})`).join("; ")}; ${plan.configurations.length === 0 ? "no configuration is left to run" : `only ${plan.configurations[0]!.id} is left, with nothing to compare it with`}`;
      return { ...(await decideStop(plan.stage, state.history.length === 0 ? "audit-failed" : "exhausted", explanation)), stagePlan: null };
    }
    await appendEventOnce(
      paths.events,
      "stage.planned",
      { stage: plan.stage, round: state.instructions.length },
      { stageKind: plan.kind, plan: file, configurations: plan.configurations.map((item) => item.id), experiments: plan.experiments.length },
    );
    return { stagePlan: plan, pending: null };
  };
}

export function decideNode(context: NodeContext) {
  const { paths, planner, enter, memo, inputOf, recordStop, stopOnBudget } = context;
  return async (state: LeaderStateValue): Promise<Partial<LeaderStateValue>> => {
    await enter("decide", state);
    const after = state.history.length;
    let step: PlannerStep;
    try {
      step = await memo(`decide-${after}-r${state.instructions.length}`, async () => planner.next(await inputOf(state)));
    } catch (error) {
      return stopOnBudget(error, after);
    }
    if (step.kind === "stop") return recordStop(step, after);
    await appendEventOnce(paths.events, "stage.next_decided", { after }, { next: step.plan.stage, stageKind: step.plan.kind, rationale: step.plan.rationale });
    return { pending: step.plan };
  };
}
