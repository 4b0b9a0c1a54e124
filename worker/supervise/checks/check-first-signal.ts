import { formatDuration } from "../../../core/duration.ts";
import type { FailureFacts } from "../../rules/failure-classifier.ts";
import type { SupervisionCheck } from "../supervision-check.ts";

/**
 * Watches for the attempt's first training signal (a step or a metric). Decides: none within
 * `first_signal_timeout` of the launch stops every process group and fails the attempt as
 * stalled, saying which rule fired, its limit and what the main log showed.
 */
export const firstSignalCheck: SupervisionCheck = {
  name: "first signal",
  start: (watch) => async () => {
    const { options, now } = watch;
    const { settings } = options;
    const signalSeen = watch.merger.lastStep !== null;
    // Unread output may hold the signal: a flood being read is not a silent start.
    const overdue = !signalSeen && !watch.readingBehind && now() - options.attemptStartedAtMs >= settings.firstSignalTimeoutMs;
    if (!overdue) return undefined;
    const limit = formatDuration(settings.firstSignalTimeoutMs);
    const seen = `${formatDuration(now() - options.attemptStartedAtMs)} after launch no step or metric was seen; ${watch.outputSeen()}`;
    await watch.stopAll();
    const detail = `no training signal within the first-signal timeout (${limit}): rule first_signal_timeout = ${limit} fired; ${seen}`;
    const facts: FailureFacts = { logTail: watch.tailOf(watch.mainLog), exitCode: null, signal: null, stalled: true, stallDetail: detail };
    return {
      kind: "failed",
      detail,
      facts,
      lastStep: null,
    };
  },
};
