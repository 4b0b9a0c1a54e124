import { formatDuration } from "../../../core/duration.ts";
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
    await watch.stopAll();
    await watch.readMetrics();
    return { kind: "timed_out", detail: `time budget ${formatDuration(options.budgetMs)} used up`, lastStep: watch.merger.lastStep };
  },
};
