import type { AttemptWatch } from "./attempt-watch.ts";
import type { AttemptEnd } from "./supervise-options.ts";

/**
 * What one check says after looking, each poll:
 * - `undefined`: nothing to decide; the next check in the list runs;
 * - an `AttemptEnd`: the attempt is over (the supervisor ends it through `AttemptWatch.end`);
 * - `"poll-again"`: the poll starts over at once, without the poll interval's sleep.
 */
export type CheckVerdict = AttemptEnd | "poll-again" | undefined;

/** One poll of a check, holding the check's own memory for the attempt. */
export type CheckPoll = () => Promise<CheckVerdict>;

/**
 * One thing the supervisor watches every poll (supervise-attempt.ts runs the list in order).
 * `start` is called once per attempt: it returns the poll function, which may keep its own
 * memory in its closure, or undefined when the check does not apply (a classic-only check
 * in a swarm run).
 */
export interface SupervisionCheck {
  readonly name: string;
  start(watch: AttemptWatch): CheckPoll | undefined;
}
