import type { CampaignEvent } from "../../campaign/index.ts";

/**
 * Re-opening a campaign that stopped on a budget, after the budget was raised in the
 * campaign's topic.md (`a3r resume <id> --reopen`). A long campaign that ran out of
 * stages, experiments, GPU-hours, wall time or model budget should go on where it stopped,
 * not start over.
 *
 * How: the leader's checkpoints keep every step, so the graph is forked from the
 * checkpoint just before the node that decided the stop, and that node runs again with
 * the new topic. Each re-opening is an "open round", counted by the `campaign.reopened`
 * events in the log (one per round: a re-opening cut short by a crash is finished, not
 * logged again), and the events after the last of them are the current round's:
 *
 * - the stop and report events carry their `openRound`, so each round logs its own;
 * - answers stored in `leader-answers/` get the suffix `-o<round>` after round 0, so a
 *   node that runs again asks its planner again instead of replaying the stop it gave.
 *
 * Only budget stops are re-opened: a stop the planner reasoned its way to (the best is
 * separated, no improvement) or a failed stage would only stop again the same way.
 */

/** How many times the campaign was re-opened (0 for one that never was). */
export function openRoundOf(events: readonly CampaignEvent[]): number {
  return events.filter((event) => event.kind === "campaign.reopened").length;
}

/** The key under which a planner answer is stored in the given open round. */
export function answerKeyIn(key: string, openRound: number): string {
  return openRound > 0 ? `${key}-o${openRound}` : key;
}

/** Events from the current open round on (everything after the last re-opening). */
export function eventsOfCurrentRound(events: readonly CampaignEvent[]): CampaignEvent[] {
  let start = 0;
  events.forEach((event, index) => {
    if (event.kind === "campaign.reopened") start = index + 1;
  });
  return events.slice(start);
}

/**
 * A re-opening on record whose fork has not run yet (the leader was killed between
 * logging it and forking): the checkpoint to fork from. Null when there is none, or when
 * its round already reported.
 */
export function pendingReopen(events: readonly CampaignEvent[]): { checkpointId: string; openRound: number } | null {
  const last = [...events].reverse().find((event) => event.kind === "campaign.reopened");
  if (last === undefined || typeof last.checkpoint !== "string") return null;
  const reported = eventsOfCurrentRound(events).some((event) => event.kind === "campaign.reported");
  return reported ? null : { checkpointId: last.checkpoint, openRound: openRoundOf(events) };
}

/** Why a finished campaign with this stop cannot be re-opened, or null when it can. */
export function reopenRefusal(stop: { reason: string; explanation: string } | null): string | null {
  if (stop === null) return "it finished without a stop decision";
  if (stop.reason !== "budget") return `it stopped for ${stop.reason} (${stop.explanation}), not on a budget; running it again would stop the same way`;
  return null;
}

/**
 * Time the campaign lay stopped after `sinceMs` (when its wall time started): from each
 * round's report to the re-opening after it. Wall time is the campaign's working time;
 * days between a stop and a raised budget are not spent by it. A gap before `sinceMs`
 * (a campaign stopped before framing started its clock) is not taken off twice.
 */
export function stoppedMs(events: readonly CampaignEvent[], sinceMs = Number.NEGATIVE_INFINITY): number {
  let total = 0;
  let reportedAt: number | null = null;
  for (const event of events) {
    if (event.kind === "campaign.reported") reportedAt ??= Date.parse(event.time);
    if (event.kind === "campaign.reopened" && reportedAt !== null) {
      total += Math.max(0, Date.parse(event.time) - Math.max(reportedAt, sinceMs));
      reportedAt = null;
    }
  }
  return total;
}
