import { readMetrics, readRunStatus, resultDirPaths, type MetricsRecord, type RunState } from "../../campaign/index.ts";
import { baseValuesOf, readConfigFile } from "../../blueprints/index.ts";
import { plannedStepsOf, stoppedShortReason, type PlannedSteps } from "../rules/planned-steps.ts";
import { hostname } from "node:os";
import { redactSecrets, secretValuesFromEnv } from "../../core/redact.ts";
import { memoryFields } from "../run/run-memory.ts";
import { judgeResult, renderCurves, renderResultMarkdown, type ResultReportInput } from "./result-report.ts";
import type { RunContext } from "../run/run-context.ts";

/**
 * The end of a run, in the order readers rely on: final status (with reason), result.md
 * (redacted), curves.svg, the closing event, and finish.flag last. Also used by a worker
 * that finds a run whose status is already terminal but has no finish.flag (its
 * predecessor died between the two writes).
 */
/** The run's planned steps (worker/rules/planned-steps.ts): front matter, the overrides in force, the configuration's values. */
export async function plannedStepsOfRun(context: RunContext): Promise<PlannedSteps | undefined> {
  const { blueprint } = context;
  const config = blueprint.config ? baseValuesOf(await readConfigFile(blueprint.config).catch(() => ({})), context.configSchema) : {};
  return plannedStepsOf(blueprint.frontMatter, context.memory.overrides, config);
}

/** The highest step recorded in the whole run, or null. */
export function lastStepOf(records: readonly MetricsRecord[]): number | null {
  return records.length === 0 ? null : Math.max(...records.map((record) => record.step));
}

/** What confined the run, from this worker's decision or (a run finished by a later worker) status.json's. */
function sandboxLine(context: RunContext, status: Record<string, unknown> | undefined): Pick<ResultReportInput, "sandbox"> {
  if (context.sandbox) return { sandbox: `${context.sandbox.mode} (${context.sandbox.why})` };
  const recorded = status?.sandbox as { mode?: unknown; why?: unknown } | undefined;
  return typeof recorded?.mode === "string" ? { sandbox: `${recorded.mode} (${String(recorded.why ?? "")})` } : {};
}

export async function finalizeRun(context: RunContext, state: RunState, reason: string | null, options: { alreadyTerminal?: boolean } = {}): Promise<void> {
  const { writer, blueprint } = context;
  const paths = resultDirPaths(context.resultDir);
  if (!options.alreadyTerminal) {
    await writer.writeStatus({ state, reason, ...memoryFields(context.memory) });
  }
  const status = (await readRunStatus(paths.status)).status;
  const metrics = await readMetrics(paths.metrics);
  // A run that did not succeed before its planned steps has a partial curve: its prediction is not judged.
  const partial = state === "succeeded" ? undefined : stoppedShortReason(await plannedStepsOfRun(context), lastStepOf(metrics.records));
  const metric = blueprint.frontMatter.metric as { name: string; goal: "maximize" | "minimize" } | undefined;
  const input: ResultReportInput = {
    blueprintId: blueprint.id,
    state,
    reason,
    ...(typeof blueprint.frontMatter.hypothesis === "string" ? { hypothesis: blueprint.frontMatter.hypothesis } : {}),
    ...(typeof blueprint.frontMatter.prediction === "string" ? { prediction: blueprint.frontMatter.prediction } : {}),
    ...(metric ? { metric } : {}),
    records: metrics.records,
    ...(partial ? { partial } : {}),
    attempts: context.memory.history,
    elapsedMs: status?.startedAt ? Date.now() - Date.parse(status.startedAt) : 0,
    budgetMs: blueprint.timeBudgetMs,
    finalOverrides: context.memory.overrides,
    ...sandboxLine(context, status),
    ...(typeof blueprint.frontMatter.campaign === "string" ? { campaign: blueprint.frontMatter.campaign } : {}),
    ...(typeof blueprint.frontMatter.stage === "number" || typeof blueprint.frontMatter.stage === "string" ? { stage: blueprint.frontMatter.stage } : {}),
  };
  const secrets = secretValuesFromEnv(context.env);
  await writer.writeResult(redactSecrets(renderResultMarkdown(input), secrets));
  await writer.writeCurves(renderCurves(metrics.records, `${blueprint.id}: ${metric?.name ?? "metrics"}`, metric?.name));
  const verdict = judgeResult(input);
  const gpus = Number(blueprint.frontMatter.gpus ?? 0);
  if (context.ledger && !options.alreadyTerminal && Number.isInteger(gpus) && gpus > 0 && input.elapsedMs > 0) {
    await context.ledger.record({ kind: "gpu", blueprintId: blueprint.id, host: status?.host ?? hostname(), gpus, hours: input.elapsedMs / 3_600_000 });
  }
  await writer.appendEvent("run.finished", { state, reason, attempts: context.attempt, verdict: verdict.verdict, observed: verdict.observed ?? null });
  await writer.finish();
  context.progress.event(`${blueprint.id}: ${state}${reason ? ` — ${reason}` : ""} (verdict: ${verdict.verdict})`);
}
