import { renderBlueprint } from "../blueprints/index.ts";
import type { RunState } from "../campaign/index.ts";
import { formatDuration } from "../core/duration.ts";
import { redactSecrets, secretValuesFromEnv } from "../core/redact.ts";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { diagnoseFailure, type DiagnosisOutcome } from "./recover/diagnose.ts";
import type { RecoveryDecision, RecoveryStrategy } from "./rules/recovery-playbook.ts";
import { pendingApprovalOf, waitForApproval, type PendingApproval } from "./recover/approval-gate.ts";
import { isRecordRunning, stopRecord } from "./launch/launched-process.ts";
import { setAsideCheckpointsFrom } from "./recover/checkpoint-choice.ts";
import { commandAllowOf, judgeProposedCommand } from "./rules/command-approval.ts";
import { commandLinesRewrittenBy } from "./recover/override-text.ts";
import { lossMetricsOf } from "./rules/loss-metrics.ts";
import { checkpointDirOf } from "./launch/attempt-plan.ts";
import { classifyFailure, type Classification } from "./rules/failure-classifier.ts";
import { diffOverrides, formatOverrideDiff } from "./rules/override-diff.ts";
import type { Overrides } from "../blueprints/index.ts";
import { decideRecovery } from "./rules/recovery-playbook.ts";
import { finalizeRun } from "./finish/finalize-run.ts";
import { withHeartbeat } from "./supervise/keep-alive.ts";
import { memoryFields } from "./run/run-memory.ts";
import type { RunContext } from "./run/run-context.ts";
import type { AttemptEnd } from "./supervise-attempt.ts";

/**
 * After a failed attempt: classify (worker/rules/failure-classifier.ts), decide
 * (worker/rules/recovery-playbook.ts, or the model for unknown failures), write down what was
 * seen and what changes (attempts.md with a diff, events.jsonl), then either hand back
 * "relaunch" or finish the run as failed. The status goes running → recovering first, so
 * a reader of status.json knows no process is supposed to run.
 */
export type FailureNext = { kind: "relaunch"; resume: boolean } | { kind: "finished"; state: RunState; reason: string };

export interface RecoveryFacts {
  baseValues: Overrides;
  hasCheckpoint: boolean;
  /** A port known to be free now, for port_in_use. */
  freePort: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function excerpt(text: string, env: NodeJS.ProcessEnv, lines = 12): string {
  const tail = text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .slice(-lines)
    .join("\n");
  return redactSecrets(tail, secretValuesFromEnv(env)).replace(/`{3,}/g, "'''");
}

/** A failed attempt as classified: its class and label, and what the attempts.md entry says was seen. */
interface ClassifiedFailure {
  ended: Extract<AttemptEnd, { kind: "failed" }>;
  /** The evidence is redacted (it goes to status.json, events and attempts.md). */
  classification: Classification;
  /** The class in words (`out of memory`). */
  label: string;
  /** The attempts.md lines: what happened, the class and its evidence, the last step, the end of the log. */
  seen: string[];
  /** How many recoveries of this class the run already had. */
  count: number;
}

/** What the next attempt is to be, as far as decided so far, and the notes attempts.md gives for it. */
interface RecoveryPlan {
  decision: RecoveryDecision;
  /** The command the next attempt runs. */
  command: string;
  /** The strategy's name in attempts.md and the `recovery.decided` event. */
  strategy: RecoveryStrategy | RecoveryDecision["kind"];
  hasCheckpoint: boolean;
  checkpointNote?: string;
  diagnosisNote?: string;
}

type Finished = Extract<FailureNext, { kind: "finished" }>;

/**
 * The failed attempt, step by step: record the class, set diverged checkpoints aside, ask
 * the playbook, ask the model when the playbook says so, then give up or record the
 * recovery (and back off) for the caller to relaunch.
 */
export async function handleFailure(context: RunContext, ended: Extract<AttemptEnd, { kind: "failed" }>, facts: RecoveryFacts): Promise<FailureNext> {
  const failure = await recordFailure(context, ended);
  const checkpoints = await setAsideDivergedCheckpoints(context, failure, facts.hasCheckpoint);
  let plan = playbookPlan(context, failure, facts, checkpoints);
  if (plan.decision.kind === "ask_llm") {
    const consulted = await consultModel(context, failure, plan);
    if ("kind" in consulted) return consulted;
    plan = consulted;
  }
  if (plan.decision.kind !== "relaunch") return giveUp(context, failure, plan, plan.decision.reason);
  return relaunch(context, failure, plan, plan.decision);
}

function redactFor(context: RunContext, text: string): string {
  return redactSecrets(text, secretValuesFromEnv(context.env));
}

/** Classifies the failure and records it: status `recovering`, `failure.classified`, the terminal. */
async function recordFailure(context: RunContext, ended: Extract<AttemptEnd, { kind: "failed" }>): Promise<ClassifiedFailure> {
  const { writer, memory, attempt } = { writer: context.writer, memory: context.memory, attempt: context.attempt };
  const classified = classifyFailure({ ...ended.facts, lossMetrics: lossMetricsOf(context.blueprint.frontMatter) });
  // The evidence is a log line: it goes to status.json, events and attempts.md, so redact it once here.
  const classification: Classification = { ...classified, evidence: redactFor(context, classified.evidence) };
  const label = classification.failureClass.replaceAll("_", " ");
  await writer.writeStatus({ state: "recovering", reason: `${label}: ${classification.evidence}` });
  await writer.appendEvent("failure.classified", {
    attempt,
    failureClass: classification.failureClass,
    rule: classification.ruleId,
    evidence: classification.evidence,
    detail: ended.detail,
    lastStep: ended.lastStep,
  });
  context.progress.event(`${context.blueprint.id}: attempt ${attempt} failed: ${label} (${ended.detail})`);

  const seen = [
    `- What happened: ${ended.detail}`,
    `- Classified as: **${label}** (rule ${classification.ruleId}) — evidence: \`${redactSecrets(classification.evidence, secretValuesFromEnv(context.env)).replaceAll("`", "'")}\``,
    `- Last step recorded: ${ended.lastStep ?? "none"}`,
    "",
    "End of the log:",
    "",
    "```text",
    excerpt(ended.facts.logTail, context.env) || "(empty)",
    "```",
  ];
  return { ended, classification, label, seen, count: memory.classCounts[classification.failureClass] ?? 0 };
}

/**
 * A NaN loss with checkpoints: the ones written at or after the divergence are moved aside
 * (`checkpoint.set-aside`), so the next attempt resumes from the last one before it.
 * Returns whether a checkpoint is left, and what attempts.md says about it.
 */
async function setAsideDivergedCheckpoints(
  context: RunContext,
  failure: ClassifiedFailure,
  hadCheckpoint: boolean,
): Promise<{ hasCheckpoint: boolean; checkpointNote?: string }> {
  const attempt = context.attempt;
  const divergedAt = failure.ended.facts.nonFiniteMetric?.step;
  if (!(failure.classification.failureClass === "nan_loss" && divergedAt !== undefined && hadCheckpoint)) return { hasCheckpoint: hadCheckpoint };
  // Resume from the last checkpoint taken before the divergence, not the one written at the NaN step.
  const checkpointDir = checkpointDirOf(context.resultDir, context.blueprint.mode);
  const choice = await setAsideCheckpointsFrom(checkpointDir, divergedAt, join(context.resultDir, "checkpoints-diverged", `attempt-${attempt}`));
  const hasCheckpoint = (await readdir(checkpointDir).catch(() => [] as string[])).length > 0;
  const checkpointNote =
    choice.movedAside.length > 0
      ? `Checkpoints written at or after step ${divergedAt} (the first non-finite loss) were moved to ${choice.asideDir}: ${choice.movedAside.join(", ")}; ${choice.resumeStep === null ? "no dated checkpoint is left" : `the next attempt resumes from step ${choice.resumeStep}`}.`
      : choice.undated.length > 0
        ? `The checkpoint folder holds no checkpoint named by its step (${choice.undated.join(", ")}), so the one before step ${divergedAt} cannot be told apart; the trainer resumes from its latest.`
        : undefined;
  if (choice.movedAside.length > 0) {
    await context.writer.appendEvent("checkpoint.set-aside", { attempt, fromStep: divergedAt, moved: choice.movedAside, resumeStep: choice.resumeStep });
  }
  return { hasCheckpoint, ...(checkpointNote === undefined ? {} : { checkpointNote }) };
}

/** The playbook's decision (worker/rules/recovery-playbook.ts), within the budget left. */
function playbookPlan(
  context: RunContext,
  failure: ClassifiedFailure,
  facts: RecoveryFacts,
  checkpoints: { hasCheckpoint: boolean; checkpointNote?: string },
): RecoveryPlan {
  const { memory } = context;
  const budgetLeftMs = Math.max(0, context.blueprint.timeBudgetMs - (Date.now() - context.runStartedAtMs));
  const decision = decideRecovery({
    classification: failure.classification,
    attemptsOfClass: failure.count,
    overrides: memory.overrides,
    baseValues: facts.baseValues,
    hasCheckpoint: checkpoints.hasCheckpoint,
    budgetLeftMs,
    ...(memory.attemptStartedAt ? { lastAttemptMs: Math.max(0, Date.now() - Date.parse(memory.attemptStartedAt)) } : {}),
    freePort: () => facts.freePort,
    playbook: context.settings.playbook,
  });
  return {
    decision,
    command: memory.command ?? context.blueprint.command,
    strategy: decision.kind === "relaunch" ? decision.strategy : decision.kind,
    hasCheckpoint: checkpoints.hasCheckpoint,
    ...(checkpoints.checkpointNote === undefined ? {} : { checkpointNote: checkpoints.checkpointNote }),
  };
}

/**
 * An unknown failure: asks the model for a diagnosis (`diagnosis.requested`). Without a
 * model the run fails; over the LLM budget the playbook's plain retry stands in; otherwise
 * the diagnosis is applied or refused. A proposed command may have to wait for a person's
 * approval, and the run may finish while it waits (timed out, cancelled).
 */
async function consultModel(context: RunContext, failure: ClassifiedFailure, plan: RecoveryPlan): Promise<RecoveryPlan | Finished> {
  const { writer, memory, attempt } = context;
  if (!context.model) {
    const reason = `${plan.decision.reason} (unknown failure, and no language model is configured to diagnose it: set A3R_LLM_PROVIDER)`;
    return { ...plan, decision: { kind: "fail", reason } };
  }
  const model = context.model;
  await writer.appendEvent("diagnosis.requested", { attempt, provider: model.provider, model: model.model });
  const diagnosis = await withHeartbeat(writer, context.settings.heartbeatIntervalMs, () =>
    diagnoseFailure({
      model,
      blueprintId: context.blueprint.id,
      command: plan.command,
      overrides: memory.overrides,
      logTail: failure.ended.facts.logTail,
      exit: failure.ended.detail,
      env: context.env,
      ...(context.commandRules ? { rules: context.commandRules } : {}),
    }),
  );
  if (diagnosis.kind === "skipped") return withoutDiagnosis(context, failure, plan, diagnosis.reason);
  return applyDiagnosis(context, failure, plan, diagnosis);
}

/**
 * Over budget: no diagnosis, and no failure for it either. The playbook's plain retry (as
 * is, from the checkpoint when there is one) stands in, still bounded by the unknown
 * class's attempts; the run ends on its own merits, not on money.
 */
async function withoutDiagnosis(context: RunContext, failure: ClassifiedFailure, plan: RecoveryPlan, reason: string): Promise<RecoveryPlan> {
  const { label, classification } = failure;
  await context.writer.appendEvent("diagnosis.skipped", { attempt: context.attempt, reason, fallback: "resume_from_checkpoint" });
  context.progress.event(`${context.blueprint.id}: no model diagnosis (${reason}); retrying as the playbook would`);
  return {
    ...plan,
    diagnosisNote: `No model diagnosis: ${reason}. Falling back to the deterministic playbook: relaunch without changes${plan.hasCheckpoint ? ", resuming from the checkpoint" : ""}.`,
    decision: {
      kind: "relaunch",
      strategy: "resume_from_checkpoint",
      overrides: context.memory.overrides,
      changed: [],
      resumeFromCheckpoint: plan.hasCheckpoint,
      delayMs: 0,
      reason: `${label}: ${classification.evidence}`,
    },
    strategy: "resume_from_checkpoint",
  };
}

/** The model's answer (`diagnosis.applied` or `diagnosis.refused`): its overrides, and a new command if it proposed one. */
async function applyDiagnosis(
  context: RunContext,
  failure: ClassifiedFailure,
  plan: RecoveryPlan,
  diagnosis: Exclude<DiagnosisOutcome, { kind: "skipped" }>,
): Promise<RecoveryPlan | Finished> {
  const { memory } = context;
  const { label, classification } = failure;
  await context.writer.appendEvent(diagnosis.kind === "apply" ? "diagnosis.applied" : "diagnosis.refused", {
    attempt: context.attempt,
    diagnosis: diagnosis.diagnosis ?? null,
    ...(diagnosis.kind === "fail" ? { reason: diagnosis.reason } : { command: diagnosis.command ?? null, overrides: diagnosis.overrides }),
  });
  let next: RecoveryPlan = { ...plan, strategy: "ask_llm" };
  if (diagnosis.diagnosis)
    next.diagnosisNote = `Model diagnosis (${context.model!.provider}/${context.model!.model}): ${redactFor(context, diagnosis.diagnosis)}`;
  if (diagnosis.kind === "fail") return { ...next, decision: { kind: "fail", reason: `${label}: ${classification.evidence}; ${diagnosis.reason}` } };
  const changed = diffOverrides(memory.overrides, diagnosis.overrides).map((change) => ({ key: change.key, from: change.from, to: change.to ?? "" }));
  next = {
    ...next,
    decision: {
      kind: "relaunch",
      strategy: "ask_llm",
      overrides: diagnosis.overrides,
      changed,
      resumeFromCheckpoint: plan.hasCheckpoint,
      delayMs: 0,
      reason: `${label}: ${classification.evidence}`,
    },
  };
  if (diagnosis.command === undefined || diagnosis.command === next.command) return adoptOverrideText(context, failure, next, diagnosis);
  return adoptProposedCommand(context, failure, next, diagnosis, diagnosis.command);
}

/**
 * Overrides a model proposed that rewrite the command text (a `{port}`, `{overrides}` or
 * `{overrides_json}` placeholder, the swarm server's port) run only if commands.allow
 * covers the rewritten lines or a person approves them, like a new command
 * (recover/override-text.ts); overrides of config values alone stay automatic.
 */
async function adoptOverrideText(
  context: RunContext,
  failure: ClassifiedFailure,
  plan: RecoveryPlan,
  diagnosis: Extract<DiagnosisOutcome, { kind: "apply" }>,
): Promise<RecoveryPlan | Finished> {
  const rewritten = commandLinesRewrittenBy(context, plan.command, context.memory.overrides, diagnosis.overrides);
  if (rewritten.length === 0) return plan;
  const verdict = judgeProposedCommand(rewritten.join("\n"), "", commandAllowOf(context.blueprint.frontMatter));
  if (verdict.automatic) return plan;
  const why = "the model's overrides rewrite the command line, and the campaign's commands.allow does not cover the new lines";
  const answer = await requestApproval(
    context,
    {
      attempt: context.attempt,
      command: plan.command,
      previousCommand: plan.command,
      overrides: diagnosis.overrides,
      diagnosis: redactFor(context, diagnosis.diagnosis),
      unapprovedLines: verdict.unapprovedLines,
      failureClass: failure.classification.failureClass,
      requestedAt: new Date().toISOString(),
    },
    { why, shown: verdict.unapprovedLines.join("\n") },
  );
  if (answer.kind === "timed_out" || answer.kind === "cancelled") {
    await finalizeRun(context, answer.kind, answer.reason);
    return { kind: "finished", state: answer.kind, reason: answer.reason };
  }
  if (answer.kind === "refused") {
    const reason = `${failure.label}: ${failure.classification.evidence}; ${answer.by} refused the overrides the model proposed${answer.note ? ` (${answer.note})` : ""}`;
    return { ...plan, decision: { kind: "fail", reason } };
  }
  return { ...plan, diagnosisNote: `${plan.diagnosisNote ?? ""}\n\nThe overrides that rewrite the command line were approved by ${answer.by}.`.trim() };
}

/**
 * A command the blueprint did not contain runs only if commands.allow covers it or a
 * person approves it (`awaiting_approval`); a refusal fails the run.
 */
async function adoptProposedCommand(
  context: RunContext,
  failure: ClassifiedFailure,
  plan: RecoveryPlan,
  diagnosis: Extract<DiagnosisOutcome, { kind: "apply" }>,
  proposed: string,
): Promise<RecoveryPlan | Finished> {
  const { label, classification } = failure;
  const verdict = judgeProposedCommand(proposed, context.blueprint.command, commandAllowOf(context.blueprint.frontMatter));
  if (verdict.automatic) return { ...plan, command: proposed };
  const answer = await requestApproval(context, {
    attempt: context.attempt,
    command: proposed,
    previousCommand: plan.command,
    overrides: diagnosis.overrides,
    diagnosis: redactFor(context, diagnosis.diagnosis),
    unapprovedLines: verdict.unapprovedLines,
    failureClass: classification.failureClass,
    requestedAt: new Date().toISOString(),
  });
  if (answer.kind === "timed_out" || answer.kind === "cancelled") {
    const state = answer.kind;
    await finalizeRun(context, state, answer.reason);
    return { kind: "finished", state, reason: answer.reason };
  }
  if (answer.kind === "refused") {
    const reason = `${label}: ${classification.evidence}; ${answer.by} refused the command the model proposed${answer.note ? ` (${answer.note})` : ""}`;
    return { ...plan, decision: { kind: "fail", reason } };
  }
  return {
    ...plan,
    command: proposed,
    diagnosisNote: `${plan.diagnosisNote ?? ""}\n\nThe proposed command was approved by ${answer.by}.`.trim(),
  };
}

/** No recovery: attempts.md says why, `recovery.gave-up`, and the run finishes `failed`. */
async function giveUp(context: RunContext, failure: ClassifiedFailure, plan: RecoveryPlan, reason: string): Promise<Finished> {
  const { writer, memory, attempt } = context;
  const { label, classification, ended, seen } = failure;
  await writer.appendAttempt({
    attempt,
    title: `failed: ${label}; giving up`,
    body: redactFor(context, [...seen, "", ...planNotes(plan), `Decision: fail the run. ${reason}`].join("\n")),
  });
  await writer.appendEvent("recovery.gave-up", { attempt, failureClass: classification.failureClass, reason });
  memory.history.push({ attempt, ending: `${label}: ${ended.detail}`, change: "gave up" });
  await finalizeRun(context, "failed", reason);
  return { kind: "finished", state: "failed", reason };
}

/**
 * A recovery: the change goes into the run's memory, attempts.md (with a diff),
 * blueprint.md, `recovery.decided` and status.json; then the back-off, if any.
 */
async function relaunch(
  context: RunContext,
  failure: ClassifiedFailure,
  plan: RecoveryPlan,
  decision: Extract<RecoveryDecision, { kind: "relaunch" }>,
): Promise<FailureNext> {
  const { writer, memory, attempt } = context;
  const { label, classification, ended, count } = failure;
  const { command, strategy } = plan;
  // The playbook knows the base value of a key the blueprint never overrode: show it.
  const before: Overrides = { ...memory.overrides };
  for (const change of decision.changed) if (before[change.key] === undefined && change.from !== undefined) before[change.key] = change.from;
  const previousCommand = memory.command ?? context.blueprint.command;
  memory.classCounts[classification.failureClass] = count + 1;
  memory.overrides = decision.overrides;
  if (command !== previousCommand) memory.command = command;
  const diff = formatOverrideDiff(diffOverrides(before, decision.overrides), { commandBefore: previousCommand, commandAfter: command });
  const changeLine =
    [
      ...diffOverrides(before, decision.overrides).map((change) => `${change.key} ${String(change.from ?? "unset")} → ${String(change.to)}`),
      ...(command !== previousCommand ? ["new command"] : []),
      ...(decision.resumeFromCheckpoint ? ["resume from checkpoint"] : []),
    ].join(", ") || "relaunch unchanged";
  await writer.appendAttempt({
    attempt,
    title: `failed: ${label}; recovering with ${strategy.replaceAll("_", " ")}`,
    body: redactFor(
      context,
      [...failure.seen, "", ...planNotes(plan), decisionLine(failure, plan, decision), "", "What changes for the next attempt:", "", diff].join("\n"),
    ),
  });
  // blueprint.md is the blueprint as executed: it follows the adaptations.
  await writer.writeBlueprint(
    renderBlueprint({ ...context.blueprint, command, frontMatter: { ...context.blueprint.frontMatter, overrides: memory.overrides } }),
  );
  await writer.appendEvent("recovery.decided", {
    attempt,
    strategy,
    changed: decision.changed,
    resume: decision.resumeFromCheckpoint,
    delayMs: decision.delayMs,
  });
  memory.history.push({ attempt, ending: `${label}: ${ended.detail}`, change: changeLine });
  await writer.writeStatus(memoryFields(memory));
  if (decision.delayMs > 0) {
    const gaveUp = await backOff(context, failure, decision.delayMs);
    if (gaveUp) return gaveUp;
  }
  return { kind: "relaunch", resume: decision.resumeFromCheckpoint };
}

/** The checkpoint and diagnosis notes of attempts.md, each followed by a blank line. */
function planNotes(plan: RecoveryPlan): string[] {
  return [...(plan.checkpointNote ? [plan.checkpointNote, ""] : []), ...(plan.diagnosisNote ? [plan.diagnosisNote, ""] : [])];
}

/** attempts.md's "Decision:" line of a recovery. */
function decisionLine(failure: ClassifiedFailure, plan: RecoveryPlan, decision: Extract<RecoveryDecision, { kind: "relaunch" }>): string {
  const { label, classification, count } = failure;
  const strategy = plan.strategy.replaceAll("_", " ");
  return `Decision: ${strategy} (recovery ${count + 1} of this kind). Resume from checkpoint: ${decision.resumeFromCheckpoint ? "yes" : "no"}.${decision.delayMs > 0 ? ` Waiting ${formatDuration(decision.delayMs)} first.` : ""}${playbookRemark(decision.reason, `${label}: ${classification.evidence}`)}`;
}

/**
 * Waits out the back-off with heartbeats (so the lease does not lapse), or gives up first
 * when it no longer fits in the budget left; returns the finished run in that case.
 */
async function backOff(context: RunContext, failure: ClassifiedFailure, delayMs: number): Promise<Finished | undefined> {
  const { writer, attempt } = context;
  const left = context.blueprint.timeBudgetMs - (Date.now() - context.runStartedAtMs);
  if (delayMs >= left) {
    // The playbook fits back-offs into the budget; a slow decision can still eat the margin.
    const reason = `${failure.label}: gave up, the back-off of ${formatDuration(delayMs)} no longer fits in the ${formatDuration(Math.max(0, left))} left of the budget`;
    await writer.appendEvent("recovery.gave-up", { attempt, failureClass: failure.classification.failureClass, reason });
    await finalizeRun(context, "failed", reason);
    return { kind: "finished", state: "failed", reason };
  }
  context.progress.event(`${context.blueprint.id}: backing off ${formatDuration(delayMs)} before attempt ${attempt + 1}`);
  // Heartbeat while waiting, so the lease does not lapse during a long back-off.
  for (const until = Date.now() + delayMs; Date.now() < until && !context.signal?.aborted; ) {
    await sleep(Math.min(context.settings.heartbeatIntervalMs, 500, until - Date.now()));
    await writer.heartbeat();
  }
  return undefined;
}

/**
 * Puts the run in `awaiting_approval` with the proposal in status.json, says so in
 * attempts.md, events.jsonl and on the terminal, and waits for the answer. Back in
 * `recovering` after an answer (approve or refuse); the caller finishes the run otherwise.
 */
async function requestApproval(context: RunContext, pending: PendingApproval, about: { why: string; shown: string } | undefined = undefined) {
  const { writer } = context;
  const lines = pending.unapprovedLines.map((line) => `  ${line}`).join("\n");
  const why = about?.why ?? "the model's fix is a command the blueprint does not contain and the campaign's commands.allow does not cover";
  await writer.appendAttempt({
    attempt: pending.attempt,
    title: "awaiting approval of a proposed command",
    body: redactSecrets(
      [
        `The diagnosis proposes ${about ? "overrides that change the command" : "a new command"}; ${why}, so it runs only after a person approves it.`,
        "",
        `Diagnosis: ${pending.diagnosis}`,
        "",
        about ? "The command lines they rewrite, as they would run:" : "Proposed command:",
        "",
        "```sh",
        (about?.shown ?? pending.command).replace(/`{3,}/g, "'''"),
        "```",
        "",
        `Approve with \`a3r worker approve ${context.resultDir}\`, or refuse with \`a3r worker approve ${context.resultDir} --refuse\`.`,
      ].join("\n"),
      secretValuesFromEnv(context.env),
    ),
  });
  // The record first, then the state: whoever sees awaiting_approval finds the proposal written down.
  await writer.appendEvent("approval.requested", { attempt: pending.attempt, command: pending.command, unapprovedLines: pending.unapprovedLines });
  await writer.writeStatus({ state: "awaiting_approval", reason: `awaiting approval: ${why}`, approval: pending });
  context.progress.event(
    `${context.blueprint.id}: awaiting approval of a proposed command; new lines:\n${lines}\napprove: a3r worker approve ${context.resultDir}`,
  );
  const answer = await waitForApproval(context, pending);
  if (answer.kind === "approved" || answer.kind === "refused") await writer.writeStatus({ state: "recovering", reason: null, approval: null });
  return answer;
}

/**
 * A worker started again on a run that was awaiting approval (its predecessor died while
 * waiting): waits on, then applies the approved proposal as the first worker would have
 * (overrides and command in memory, attempts.md, blueprint.md) and hands back "relaunch".
 */
export async function resumeAwaitingApproval(context: RunContext, status: Record<string, unknown>): Promise<FailureNext> {
  const { writer, memory } = context;
  const pending = pendingApprovalOf(status);
  if (!pending) {
    await writer.writeStatus({ state: "recovering", reason: null, approval: null });
    return { kind: "relaunch", resume: true };
  }
  for (const record of memory.processes) if (await isRecordRunning(record)) await stopRecord(record, context.settings.gracePeriodMs);
  context.progress.event(`${context.blueprint.id}: still awaiting approval of a proposed command; approve: a3r worker approve ${context.resultDir}`);
  const answer = await waitForApproval(context, pending);
  if (answer.kind === "timed_out" || answer.kind === "cancelled") {
    await finalizeRun(context, answer.kind, answer.reason);
    return { kind: "finished", state: answer.kind, reason: answer.reason };
  }
  await writer.writeStatus({ state: "recovering", reason: null, approval: null });
  if (answer.kind === "refused") {
    const reason = `${pending.failureClass.replaceAll("_", " ")}: ${answer.by} refused the command the model proposed${answer.note ? ` (${answer.note})` : ""}`;
    await writer.appendAttempt({ attempt: pending.attempt, title: "proposed command refused; giving up", body: `Decision: fail the run. ${reason}` });
    await writer.appendEvent("recovery.gave-up", { attempt: pending.attempt, failureClass: pending.failureClass, reason });
    await finalizeRun(context, "failed", reason);
    return { kind: "finished", state: "failed", reason };
  }
  const before = { ...memory.overrides };
  memory.overrides = pending.overrides;
  memory.command = pending.command;
  memory.classCounts[pending.failureClass] = (memory.classCounts[pending.failureClass] ?? 0) + 1;
  await writer.appendAttempt({
    attempt: pending.attempt,
    title: `proposed command approved by ${answer.by}; recovering with ask llm`,
    body: formatOverrideDiff(diffOverrides(before, pending.overrides), { commandBefore: pending.previousCommand, commandAfter: pending.command }),
  });
  await writer.writeBlueprint(
    renderBlueprint({ ...context.blueprint, command: pending.command, frontMatter: { ...context.blueprint.frontMatter, overrides: memory.overrides } }),
  );
  await writer.appendEvent("recovery.decided", {
    attempt: pending.attempt,
    strategy: "ask_llm",
    changed: diffOverrides(before, pending.overrides),
    resume: true,
    delayMs: 0,
  });
  memory.history.push({ attempt: pending.attempt, ending: pending.failureClass.replaceAll("_", " "), change: "new command (approved)" });
  await writer.writeStatus(memoryFields(memory));
  return { kind: "relaunch", resume: true };
}

/** What the playbook added to the plain "class: evidence" reason (e.g. a back-off shortened to fit the budget). */
function playbookRemark(reason: string, seen: string): string {
  const extra = reason.startsWith(seen) ? reason.slice(seen.length).trim() : "";
  return extra ? ` ${extra}` : "";
}
