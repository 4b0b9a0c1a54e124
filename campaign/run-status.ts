import { A3rError } from "../core/errors.ts";

/**
 * The life of one run (one blueprint executed on one host), as status.json records it.
 * This module is the only place that knows which changes of state are legal; every writer
 * of status.json goes through `assertTransition`.
 *
 * ```
 *   queued ──> preparing ──> running ──────> succeeded
 *                              │  ▲
 *                              ▼  │
 *                           recovering
 *
 *                        recovering ──> awaiting_approval ──> recovering
 *
 *   failed    <── preparing, running, recovering, awaiting_approval
 *   timed_out <── running, recovering, awaiting_approval
 *   cancelled <── queued, preparing, running, recovering, awaiting_approval
 *   refused   <── queued
 *   stopped_early <── running, recovering
 * ```
 *
 * - queued: accepted, nothing on the host touched yet.
 * - preparing: paths, interpreter and config checked, blueprint copied; no process yet.
 * - running: the training process group is alive and being supervised.
 * - recovering: a failure was classified and a fix is being applied before relaunch;
 *   a successful relaunch goes back to running with the next attempt number.
 * - awaiting_approval: the fix is a command the blueprint did not contain and the campaign's
 *   `commands.allow` does not cover; no process runs until a person approves it
 *   (`a3r worker approve`, back to recovering) or refuses it (failed). The worker keeps
 *   its lease and heartbeat while it waits; status.json `approval` holds the proposal.
 * - refused: the worker's command policy refused the blueprint; nothing was prepared or
 *   launched, and the result directory says why (status.json `reason`, events.jsonl).
 * - stopped_early: the campaign's early stopping (successive halving) judged the run
 *   hopeless at a rung and asked its worker to stop it (`stop-request.json`); its partial
 *   results and its compute stay on record, but it is not a completed run to compare.
 * - succeeded | failed | timed_out | cancelled | refused | stopped_early: terminal, no exits. A finished run is
 *   never revived: a new try of the same blueprint is a new result directory.
 *
 * Left out on purpose: why a run failed (status.json `reason`, events.jsonl) and how many
 * attempts are allowed (the worker's recovery policy).
 */
export const runStates = [
  "queued",
  "preparing",
  "running",
  "recovering",
  "awaiting_approval",
  "succeeded",
  "failed",
  "timed_out",
  "cancelled",
  "refused",
  "stopped_early",
] as const;

export type RunState = (typeof runStates)[number];

export const terminalRunStates = ["succeeded", "failed", "timed_out", "cancelled", "refused", "stopped_early"] as const satisfies readonly RunState[];

export type TerminalRunState = (typeof terminalRunStates)[number];

/** The legal transitions: the states each state may move to. Staying in a state is not a transition. */
export const runStatusTransitions: Readonly<Record<RunState, readonly RunState[]>> = {
  queued: ["preparing", "cancelled", "refused"],
  preparing: ["running", "failed", "cancelled"],
  running: ["recovering", "succeeded", "failed", "timed_out", "cancelled", "stopped_early"],
  recovering: ["running", "awaiting_approval", "failed", "timed_out", "cancelled", "stopped_early"],
  awaiting_approval: ["recovering", "failed", "timed_out", "cancelled"],
  succeeded: [],
  failed: [],
  timed_out: [],
  cancelled: [],
  refused: [],
  stopped_early: [],
};

/** The state a new status.json must start in. */
export const initialRunState: RunState = "queued";

export function isRunState(value: unknown): value is RunState {
  return typeof value === "string" && (runStates as readonly string[]).includes(value);
}

export function isTerminalRunState(state: RunState): state is TerminalRunState {
  return (terminalRunStates as readonly RunState[]).includes(state);
}

/** A live state: a supervisor is expected to be heartbeating. */
export function isActiveRunState(state: RunState): boolean {
  return state === "preparing" || state === "running" || state === "recovering" || state === "awaiting_approval";
}

export function canTransition(from: RunState, to: RunState): boolean {
  return runStatusTransitions[from].includes(to);
}

/** Throws STATUS_TRANSITION_ILLEGAL naming both states and the legal ones. */
export function assertTransition(from: RunState, to: RunState): void {
  if (canTransition(from, to)) return;
  const legal = runStatusTransitions[from];
  const exits = legal.length === 0 ? `${from} is terminal and has no exits` : `from ${from} a run may go to ${legal.join(", ")}`;
  throw new A3rError("STATUS_TRANSITION_ILLEGAL", `illegal run status transition ${from} -> ${to}: ${exits}`, {
    details: { from, to, legal: [...legal] },
  });
}
