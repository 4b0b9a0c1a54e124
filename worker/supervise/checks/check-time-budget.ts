import { formatDuration } from "../../../core/duration.ts";
import { stopRecord } from "../../launch/launched-process.ts";
import type { SupervisionCheck } from "../supervision-check.ts";

/**
 * Watches the run's hard time budget (from the run's start, over all attempts). Decides: once
 * it is used up, every process group is stopped, the last metrics are read, and the attempt
 * ends `timed_out`.
 */
export const timeBudgetCheck: SupervisionCheck = {
  name: "time budget",
  start: (watch) => async () => {
    const { options } = watch;
    const usedUp = watch.now() - options.runStartedAtMs >= options.budgetMs;
    if (!usedUp) return undefined;
    // As AttemptWatch.stopAll (clients first), keeping what each stop took: TERM that ended
    // it within the grace period, or KILL after it (the run ends at most one grace period late).
    const stopped = [];
    for (const record of [...options.processes].reverse()) {
      stopped.unshift({ role: record.role, pid: record.pid, outcome: await stopRecord(record, options.settings.gracePeriodMs) });
    }
    await watch.readMetrics();
    return { kind: "timed_out", detail: `time budget ${formatDuration(options.budgetMs)} used up`, lastStep: watch.merger.lastStep, stopped };
  },
};
