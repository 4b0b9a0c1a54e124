import { formatDuration } from "../../../core/duration.ts";
import type { FailureFacts } from "../../rules/failure-classifier.ts";
import type { SupervisionCheck } from "../supervision-check.ts";

/**
 * Watches for new steps once the first one came (a hang). Decides: no new step for
 * `worker.stall_timeout` stops every process group and fails the attempt as stalled, saying
 * which rule fired, its limit, the last step and when it was recorded, and what the main log showed.
 * A log with unread output is never a hang: while the reader works through a burst the stall
 * clock waits (AttemptWatch.readMetrics), since the steps may be in what is still unread.
 */
export const stallCheck: SupervisionCheck = {
  name: "stall",
  start: (watch) => async () => {
    const { options, now, merger } = watch;
    const { settings } = options;
    const signalSeen = merger.lastStep !== null;
    const stalled = signalSeen && !watch.readingBehind && now() - watch.lastProgressAt >= settings.stallTimeoutMs;
    if (!stalled) return undefined;
    const limit = formatDuration(settings.stallTimeoutMs);
    const stepAgo = watch.lastStepAt === null ? "before this worker watched" : `${formatDuration(now() - watch.lastStepAt)} ago`;
    const seen = `step ${merger.lastStep} was the last, recorded ${stepAgo}; ${watch.outputSeen()}`;
    await watch.stopAll();
    const detail = `no new step for ${limit} after step ${merger.lastStep} (stall): rule worker.stall_timeout = ${limit} fired; ${seen}`;
    const facts: FailureFacts = { logTail: watch.tailOf(watch.mainLog), exitCode: null, signal: null, stalled: true, stallDetail: detail };
    return {
      kind: "failed",
      detail,
      facts,
      lastStep: merger.lastStep,
    };
  },
};
