import { renderBlueprint } from "../../blueprints/index.ts";
import type { RunState } from "../../campaign/index.ts";
import { formatDuration } from "../../core/duration.ts";
import { redactSecrets, secretValuesFromEnv } from "../../core/redact.ts";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { diagnoseFailure } from "./diagnose.ts";
import { pendingApprovalOf, waitForApproval, type PendingApproval } from "./approval-gate.ts";
import { isRecordRunning, stopRecord } from "../launch/launched-process.ts";
import { setAsideCheckpointsFrom } from "./checkpoint-choice.ts";
import { commandAllowOf, judgeProposedCommand } from "./command-approval.ts";
import { lossMetricsOf } from "./loss-metrics.ts";
import { checkpointDirOf } from "../launch/attempt-plan.ts";
import { classifyFailure, type Classification } from "./failure-classifier.ts";
import { diffOverrides, formatOverrideDiff } from "./overrides.ts";
import { decideRecovery, type Overrides } from "./recovery-playbook.ts";
import { finalizeRun } from "../finish/finalize-run.ts";
import { withHeartbeat } from "../supervise/keep-alive.ts";
import { memoryFields } from "../run-memory.ts";
import type { RunContext } from "../run-context.ts";
import type { AttemptEnd } from "../supervise/supervise-attempt.ts";

/**
 * After a failed attempt: classify (worker/recover/failure-classifier.ts), decide
 * (worker/recover/recovery-playbook.ts, or the model for unknown failures), write down what was
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

export async function handleFailure(context: RunContext, ended: Extract<AttemptEnd, { kind: "failed" }>, facts: RecoveryFacts): Promise<FailureNext> {
  const { writer, memory, attempt } = { writer: context.writer, memory: context.memory, attempt: context.attempt };
  const redact = (text: string) => redactSecrets(text, secretValuesFromEnv(context.env));
  const classified = classifyFailure({ ...ended.facts, lossMetrics: lossMetricsOf(context.blueprint.frontMatter) });
  // The evidence is a log line: it goes to status.json, events and attempts.md, so redact it once here.
  const classification: Classification = { ...classified, evidence: redact(classified.evidence) };
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

  const count = memory.classCounts[classification.failureClass] ?? 0;
  let hasCheckpoint = facts.hasCheckpoint;
  let checkpointNote: string | undefined;
  const divergedAt = ended.facts.nonFiniteMetric?.step;
  if (classification.failureClass === "nan_loss" && divergedAt !== undefined && hasCheckpoint) {
    // Resume from the last checkpoint taken before the divergence, not the one written at the NaN step.
    const checkpointDir = checkpointDirOf(context.resultDir, context.blueprint.mode);
    const choice = await setAsideCheckpointsFrom(checkpointDir, divergedAt, join(context.resultDir, "checkpoints-diverged", `attempt-${attempt}`));
    hasCheckpoint = (await readdir(checkpointDir).catch(() => [] as string[])).length > 0;
    checkpointNote =
      choice.movedAside.length > 0
        ? `Checkpoints written at or after step ${divergedAt} (the first non-finite loss) were moved to ${choice.asideDir}: ${choice.movedAside.join(", ")}; ${choice.resumeStep === null ? "no dated checkpoint is left" : `the next attempt resumes from step ${choice.resumeStep}`}.`
        : choice.undated.length > 0
          ? `The checkpoint folder holds no checkpoint named by its step (${choice.undated.join(", ")}), so the one before step ${divergedAt} cannot be told apart; the trainer resumes from its latest.`
          : undefined;
    if (choice.movedAside.length > 0) {
      await writer.appendEvent("checkpoint.set-aside", { attempt, fromStep: divergedAt, moved: choice.movedAside, resumeStep: choice.resumeStep });
    }
  }
  const budgetLeftMs = Math.max(0, context.blueprint.timeBudgetMs - (Date.now() - context.runStartedAtMs));
  let decision = decideRecovery({
    classification,
    attemptsOfClass: count,
    overrides: memory.overrides,
    baseValues: facts.baseValues,
    hasCheckpoint,
    budgetLeftMs,
    ...(memory.attemptStartedAt ? { lastAttemptMs: Math.max(0, Date.now() - Date.parse(memory.attemptStartedAt)) } : {}),
    freePort: () => facts.freePort,
    playbook: context.settings.playbook,
  });
  let command = memory.command ?? context.blueprint.command;
  let strategy = decision.kind === "relaunch" ? decision.strategy : decision.kind;
  let diagnosisNote: string | undefined;

  if (decision.kind === "ask_llm") {
    if (!context.model) {
      decision = { kind: "fail", reason: `${decision.reason} (unknown failure, and no language model is configured to diagnose it: set A3R_LLM_PROVIDER)` };
    } else {
      const model = context.model;
      await writer.appendEvent("diagnosis.requested", { attempt, provider: model.provider, model: model.model });
      const diagnosis = await withHeartbeat(writer, context.settings.heartbeatIntervalMs, () =>
        diagnoseFailure({
          model,
          blueprintId: context.blueprint.id,
          command,
          overrides: memory.overrides,
          logTail: ended.facts.logTail,
          exit: ended.detail,
          env: context.env,
          ...(context.commandRules ? { rules: context.commandRules } : {}),
        }),
      );
      if (diagnosis.kind === "skipped") {
        // Over budget: no diagnosis, and no failure for it either. The playbook's plain
        // retry (as is, from the checkpoint when there is one) stands in, still bounded by
        // the unknown class's attempts; the run ends on its own merits, not on money.
        await writer.appendEvent("diagnosis.skipped", { attempt, reason: diagnosis.reason, fallback: "resume_from_checkpoint" });
        context.progress.event(`${context.blueprint.id}: no model diagnosis (${diagnosis.reason}); retrying as the playbook would`);
        diagnosisNote = `No model diagnosis: ${diagnosis.reason}. Falling back to the deterministic playbook: relaunch without changes${hasCheckpoint ? ", resuming from the checkpoint" : ""}.`;
        decision = {
          kind: "relaunch",
          strategy: "resume_from_checkpoint",
          overrides: memory.overrides,
          changed: [],
          resumeFromCheckpoint: hasCheckpoint,
          delayMs: 0,
          reason: `${label}: ${classification.evidence}`,
        };
        strategy = "resume_from_checkpoint";
      } else {
        await writer.appendEvent(diagnosis.kind === "apply" ? "diagnosis.applied" : "diagnosis.refused", {
          attempt,
          diagnosis: diagnosis.diagnosis ?? null,
          ...(diagnosis.kind === "fail" ? { reason: diagnosis.reason } : { command: diagnosis.command ?? null, overrides: diagnosis.overrides }),
        });
        if (diagnosis.diagnosis)
          diagnosisNote = `Model diagnosis (${context.model.provider}/${context.model.model}): ${redactSecrets(diagnosis.diagnosis, secretValuesFromEnv(context.env))}`;
        if (diagnosis.kind === "fail") {
          decision = { kind: "fail", reason: `${label}: ${classification.evidence}; ${diagnosis.reason}` };
        } else {
          const changed = diffOverrides(memory.overrides, diagnosis.overrides).map((change) => ({ key: change.key, from: change.from, to: change.to ?? "" }));
          decision = {
            kind: "relaunch",
            strategy: "ask_llm",
            overrides: diagnosis.overrides,
            changed,
            resumeFromCheckpoint: hasCheckpoint,
            delayMs: 0,
            reason: `${label}: ${classification.evidence}`,
          };
          if (diagnosis.command !== undefined && diagnosis.command !== command) {
            // A command the blueprint did not contain runs only if commands.allow covers it or a person approves it.
            const verdict = judgeProposedCommand(diagnosis.command, context.blueprint.command, commandAllowOf(context.blueprint.frontMatter));
            if (verdict.automatic) {
              command = diagnosis.command;
            } else {
              const answer = await requestApproval(context, {
                attempt,
                command: diagnosis.command,
                previousCommand: command,
                overrides: diagnosis.overrides,
                diagnosis: redact(diagnosis.diagnosis),
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
                decision = {
                  kind: "fail",
                  reason: `${label}: ${classification.evidence}; ${answer.by} refused the command the model proposed${answer.note ? ` (${answer.note})` : ""}`,
                };
              } else {
                command = diagnosis.command;
                diagnosisNote = `${diagnosisNote ?? ""}\n\nThe proposed command was approved by ${answer.by}.`.trim();
              }
            }
          }
        }
        strategy = "ask_llm";
      }
    }
  }

  if (decision.kind !== "relaunch") {
    const reason = decision.reason;
    await writer.appendAttempt({
      attempt,
      title: `failed: ${label}; giving up`,
      body: redact(
        [...seen, "", ...(checkpointNote ? [checkpointNote, ""] : []), ...(diagnosisNote ? [diagnosisNote, ""] : []), `Decision: fail the run. ${reason}`].join(
          "\n",
        ),
      ),
    });
    await writer.appendEvent("recovery.gave-up", { attempt, failureClass: classification.failureClass, reason });
    memory.history.push({ attempt, ending: `${label}: ${ended.detail}`, change: "gave up" });
    await finalizeRun(context, "failed", reason);
    return { kind: "finished", state: "failed", reason };
  }

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
    body: redact(
      [
        ...seen,
        "",
        ...(checkpointNote ? [checkpointNote, ""] : []),
        ...(diagnosisNote ? [diagnosisNote, ""] : []),
        `Decision: ${strategy.replaceAll("_", " ")} (recovery ${count + 1} of this kind). Resume from checkpoint: ${decision.resumeFromCheckpoint ? "yes" : "no"}.${decision.delayMs > 0 ? ` Waiting ${formatDuration(decision.delayMs)} first.` : ""}${playbookRemark(decision.reason, `${label}: ${classification.evidence}`)}`,
        "",
        "What changes for the next attempt:",
        "",
        diff,
      ].join("\n"),
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
    const left = context.blueprint.timeBudgetMs - (Date.now() - context.runStartedAtMs);
    if (decision.delayMs >= left) {
      // The playbook fits back-offs into the budget; a slow decision can still eat the margin.
      const reason = `${label}: gave up, the back-off of ${formatDuration(decision.delayMs)} no longer fits in the ${formatDuration(Math.max(0, left))} left of the budget`;
      await writer.appendEvent("recovery.gave-up", { attempt, failureClass: classification.failureClass, reason });
      await finalizeRun(context, "failed", reason);
      return { kind: "finished", state: "failed", reason };
    }
    context.progress.event(`${context.blueprint.id}: backing off ${formatDuration(decision.delayMs)} before attempt ${attempt + 1}`);
    // Heartbeat while waiting, so the lease does not lapse during a long back-off.
    for (const until = Date.now() + decision.delayMs; Date.now() < until && !context.signal?.aborted; ) {
      await sleep(Math.min(context.settings.heartbeatIntervalMs, 500, until - Date.now()));
      await writer.heartbeat();
    }
  }
  return { kind: "relaunch", resume: decision.resumeFromCheckpoint };
}

/**
 * Puts the run in `awaiting_approval` with the proposal in status.json, says so in
 * attempts.md, events.jsonl and on the terminal, and waits for the answer. Back in
 * `recovering` after an answer (approve or refuse); the caller finishes the run otherwise.
 */
async function requestApproval(context: RunContext, pending: PendingApproval) {
  const { writer } = context;
  const lines = pending.unapprovedLines.map((line) => `  ${line}`).join("\n");
  const why = "the model's fix is a command the blueprint does not contain and the campaign's commands.allow does not cover";
  await writer.appendAttempt({
    attempt: pending.attempt,
    title: "awaiting approval of a proposed command",
    body: redactSecrets(
      [
        `The diagnosis proposes a new command; ${why}, so it runs only after a person approves it.`,
        "",
        `Diagnosis: ${pending.diagnosis}`,
        "",
        "Proposed command:",
        "",
        "```sh",
        pending.command.replace(/`{3,}/g, "'''"),
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
