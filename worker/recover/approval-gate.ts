import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { z } from "zod";
import { readRunStatus, resultDirPaths } from "../../campaign/index.ts";
import { writeJsonAtomic } from "../../core/atomic-file.ts";
import { A3rError } from "../../core/errors.ts";
import { formatDuration } from "../../core/duration.ts";
import type { RunContext } from "../run/run-context.ts";

/**
 * The wait for a person when a diagnosis proposes a command that needs approval
 * (worker/rules/command-approval.ts). The run is `awaiting_approval`; status.json
 * `approval` holds the proposal (command, why, which lines are new). A person answers with
 * `a3r worker approve <result dir>` (or `--refuse`), which writes `approval.json` next to
 * status.json: the worker owns status.json, so the answer is a file of its own, and it
 * names the command it approves, so an answer to an older proposal approves nothing.
 *
 * While it waits the worker heartbeats (its lease stays live) and watches the time budget
 * and the cancel signal: the budget keeps running, as it does for every other wait.
 */
export const approvalFileName = "approval.json";

export const pendingApprovalSchema = z.object({
  attempt: z.number().int().nonnegative(),
  command: z.string().min(1),
  previousCommand: z.string(),
  overrides: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  diagnosis: z.string(),
  unapprovedLines: z.array(z.string()),
  failureClass: z.string(),
  requestedAt: z.string(),
});
export type PendingApproval = z.infer<typeof pendingApprovalSchema>;

export const approvalDecisionSchema = z.object({
  command: z.string().min(1),
  decision: z.enum(["approved", "refused"]),
  by: z.string().min(1).max(200),
  time: z.string(),
  note: z.string().max(2000).optional(),
});
export type ApprovalDecision = z.infer<typeof approvalDecisionSchema>;

export type ApprovalOutcome =
  | { kind: "approved"; by: string }
  | { kind: "refused"; by: string; note?: string }
  | { kind: "timed_out"; reason: string }
  | { kind: "cancelled"; reason: string };

const sleep = (ms: number) => new Promise((resolveSleep) => setTimeout(resolveSleep, ms));

async function readDecision(resultDir: string): Promise<ApprovalDecision | undefined> {
  const text = await readFile(join(resultDir, approvalFileName), "utf8").catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    const parsed = approvalDecisionSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Waits until a person answers the proposal, the budget runs out, or the run is cancelled. */
export async function waitForApproval(context: RunContext, pending: PendingApproval): Promise<ApprovalOutcome> {
  const { writer, settings } = context;
  const deadline = context.runStartedAtMs + context.blueprint.timeBudgetMs;
  let ignoredStale = false;
  let lastHeartbeat = 0;
  for (;;) {
    const decision = await readDecision(context.resultDir);
    if (decision && decision.command === pending.command) {
      await writer.appendEvent(decision.decision === "approved" ? "approval.granted" : "approval.refused", {
        attempt: pending.attempt,
        by: decision.by,
        ...(decision.note ? { note: decision.note } : {}),
      });
      return decision.decision === "approved"
        ? { kind: "approved", by: decision.by }
        : { kind: "refused", by: decision.by, ...(decision.note ? { note: decision.note } : {}) };
    }
    if (decision && !ignoredStale) {
      ignoredStale = true;
      await writer.appendEvent("approval.ignored", { attempt: pending.attempt, reason: "approval.json names another command than the one awaiting approval" });
    }
    if (context.signal?.aborted) return { kind: "cancelled", reason: `cancelled while awaiting approval (${String(context.signal.reason ?? "aborted")})` };
    if (Date.now() >= deadline) {
      return {
        kind: "timed_out",
        reason: `time budget ${formatDuration(context.blueprint.timeBudgetMs)} used up while the proposed command awaited approval (a3r worker approve ${context.resultDir})`,
      };
    }
    if (Date.now() - lastHeartbeat >= settings.heartbeatIntervalMs) {
      lastHeartbeat = Date.now();
      await writer.heartbeat();
    }
    await sleep(Math.max(20, Math.min(settings.pollIntervalMs, settings.heartbeatIntervalMs, deadline - Date.now())));
  }
}

/** The proposal status.json holds for a run that awaits approval; undefined otherwise. */
export function pendingApprovalOf(status: Record<string, unknown> | undefined): PendingApproval | undefined {
  const parsed = pendingApprovalSchema.safeParse(status?.approval);
  return parsed.success ? parsed.data : undefined;
}

export interface ApproveInput {
  resultDir: string;
  refuse?: boolean;
  by: string;
  note?: string;
  /** When given, the command must equal the pending one (guards against approving a newer proposal unseen). */
  expectCommand?: string;
  now?: () => Date;
}

/**
 * `a3r worker approve`: answers the proposal of a run that awaits approval. Refuses a run
 * that is not waiting (REVIEW_NOT_PENDING) and a directory without a run status.
 */
export async function answerApproval(input: ApproveInput): Promise<{ pending: PendingApproval; decision: ApprovalDecision; file: string }> {
  const dir = resolve(input.resultDir);
  const paths = resultDirPaths(dir);
  const read = await readRunStatus(paths.status);
  if (!read.exists) {
    throw new A3rError("FILE_NOT_FOUND", `${paths.status} does not exist: ${dir} is not a run's result directory`, {
      where: dir,
      hint: "pass the result directory of the run (the folder with status.json), e.g. runs/<campaign>/results/<blueprint id>",
    });
  }
  const status = read.status;
  if (!status) {
    throw new A3rError("SCHEMA_INVALID", `cannot read ${paths.status}: ${read.problems[0]?.message ?? "it is invalid"}`, { where: paths.status });
  }
  const pending = pendingApprovalOf(status as Record<string, unknown>);
  if (status.state !== "awaiting_approval" || !pending) {
    throw new A3rError("REVIEW_NOT_PENDING", `run ${dir} is not awaiting approval (state ${status.state})`, {
      where: paths.status,
      hint: "only a run whose status is awaiting_approval has a proposed command to approve; see `a3r status` or the run's status.json",
    });
  }
  if (input.expectCommand !== undefined && input.expectCommand.trim() !== pending.command.trim()) {
    throw new A3rError("USAGE", "--command does not match the command awaiting approval", {
      where: paths.status,
      hint: `the run awaits approval of: ${pending.command}`,
    });
  }
  const decision: ApprovalDecision = {
    command: pending.command,
    decision: input.refuse ? "refused" : "approved",
    by: input.by,
    time: (input.now?.() ?? new Date()).toISOString(),
    ...(input.note ? { note: input.note } : {}),
  };
  const file = join(dir, approvalFileName);
  await writeJsonAtomic(file, decision);
  return { pending, decision, file };
}
