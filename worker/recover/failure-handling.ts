import { renderBlueprint } from "../../blueprints/index.ts";
import type { RunState } from "../../campaign/index.ts";
import { formatDuration } from "../../core/duration.ts";
import { redactSecrets, secretValuesFromEnv } from "../../core/redact.ts";
import { diagnoseFailure } from "./diagnose.ts";
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
  const classified = classifyFailure(ended.facts);
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
  let decision = decideRecovery({
    classification,
    attemptsOfClass: count,
    overrides: memory.overrides,
    baseValues: facts.baseValues,
    hasCheckpoint: facts.hasCheckpoint,
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
        diagnosisNote = `No model diagnosis: ${diagnosis.reason}. Falling back to the deterministic playbook: relaunch without changes${facts.hasCheckpoint ? ", resuming from the checkpoint" : ""}.`;
        decision = {
          kind: "relaunch",
          strategy: "resume_from_checkpoint",
          overrides: memory.overrides,
          changed: [],
          resumeFromCheckpoint: facts.hasCheckpoint,
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
            resumeFromCheckpoint: facts.hasCheckpoint,
            delayMs: 0,
            reason: `${label}: ${classification.evidence}`,
          };
          if (diagnosis.command !== undefined) command = diagnosis.command;
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
      body: redact([...seen, "", ...(diagnosisNote ? [diagnosisNote, ""] : []), `Decision: fail the run. ${reason}`].join("\n")),
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
        ...(diagnosisNote ? [diagnosisNote, ""] : []),
        `Decision: ${strategy.replaceAll("_", " ")} (recovery ${count + 1} of this kind). Resume from checkpoint: ${decision.resumeFromCheckpoint ? "yes" : "no"}.${decision.delayMs > 0 ? ` Waiting ${formatDuration(decision.delayMs)} first.` : ""}`,
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
      const reason = `${label}: the back-off of ${formatDuration(decision.delayMs)} does not fit in the ${formatDuration(Math.max(0, left))} left of the budget`;
      await finalizeRun(context, "timed_out", reason);
      return { kind: "finished", state: "timed_out", reason };
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
