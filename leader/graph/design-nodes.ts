import { appendEventOnce } from "../../campaign/index.ts";
import { auditBlueprintTexts, checkStageBudgets, commandsAddedBy } from "./graph-steps.ts";
import { draftStageBlueprints, writeBlueprintTexts } from "../design/write-blueprints.ts";
import { engineFindings } from "../design/engine-findings.ts";
import type { NodeContext } from "./node-context.ts";
import type { LeaderStateValue } from "./leader-state.ts";

/** Design: blueprints drafted and written, audited (one repair round), and the budget gate before anything runs. Wiring: leader-graph.ts. */

export function designNode(context: NodeContext) {
  const { paths, planner, topicOf, enter, memo, stopOnBudget } = context;
  return async (state: LeaderStateValue): Promise<Partial<LeaderStateValue>> => {
    await enter("design", state);
    const topic = await topicOf();
    const plan = state.stagePlan!;
    const drafts = draftStageBlueprints(topic, plan, paths);
    if (!planner.writeBlueprints) return { blueprintTexts: drafts };
    try {
      const texts = await memo(`write-${plan.stage}-r${state.instructions.length}`, () =>
        planner.writeBlueprints!({ topic, plan, drafts, instructions: state.instructions }),
      );
      return { blueprintTexts: texts };
    } catch (error) {
      return stopOnBudget(error, plan.stage);
    }
  };
}

export function auditNode(context: NodeContext) {
  const { paths, planner, topicOf, enter, memo, decideStop, stopOnBudget, engineOf } = context;
  return async (state: LeaderStateValue): Promise<Partial<LeaderStateValue>> => {
    await enter("audit", state);
    const engine = await engineOf();
    const audit = (texts: Parameters<typeof auditBlueprintTexts>[2], drafts: Parameters<typeof auditBlueprintTexts>[3]) => [
      ...auditBlueprintTexts(paths, plan.stage, texts, drafts),
      ...(engine ? engineFindings(engine, texts) : []),
    ];
    const topic = await topicOf();
    const plan = state.stagePlan!;
    const expected = plan.experiments.map((experiment) => experiment.blueprintId);
    const drafts = draftStageBlueprints(topic, plan, paths);
    let texts = state.blueprintTexts;
    let findings = audit(texts, drafts);
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
      findings = audit(texts, drafts);
    }
    if (findings.length > 0) {
      // Every finding (up to a bound) goes into the stop, so the report shows them all.
      const shown = findings.slice(0, 10).map((finding) => `${finding.blueprintId}:${finding.line} ${finding.message}`);
      const explanation = `stage ${plan.stage}: ${findings.length} blueprint error(s): ${shown.join("; ")}${findings.length > shown.length ? `; and ${findings.length - shown.length} more in events.jsonl` : ""}`;
      await appendEventOnce(paths.events, "stage.audit_failed", { stage: plan.stage }, { findings: findings.slice(0, 20) });
      for (const id of expected)
        await appendEventOnce(paths.events, "blueprint.skipped", { blueprintId: id }, { stage: plan.stage, reason: "its stage's blueprints failed the audit" });
      return { ...(await decideStop(plan.stage, "audit-failed", explanation)), blueprintTexts: [] };
    }
    const files = await writeBlueprintTexts(paths, plan.stage, texts);
    return { blueprintFiles: files, blueprintTexts: [], unapprovedCommands: commandsAddedBy(drafts, texts, topic.commands.allow) };
  };
}

export function gateNode(context: NodeContext) {
  const { paths, planner, topicOf, enter, usageOf, decideStop } = context;
  return async (state: LeaderStateValue): Promise<Partial<LeaderStateValue>> => {
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
  };
}
