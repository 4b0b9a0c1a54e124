import type { SupervisionCheck } from "../supervision-check.ts";

/**
 * Reports the attempt's progress (step, the blueprint's metric, time used of the budget)
 * to the progress reporter, every poll. Decides nothing.
 */
export const progressLineCheck: SupervisionCheck = {
  name: "progress line",
  start: (watch) => async () => {
    const { options } = watch;
    const metricValue = options.metricName ? watch.lastMetrics?.[options.metricName] : undefined;
    options.progress.progress({
      attempt: options.attempt,
      step: watch.merger.lastStep,
      ...(options.metricName ? { metricName: options.metricName } : {}),
      ...(metricValue === undefined ? {} : { metricValue }),
      elapsedMs: watch.now() - options.runStartedAtMs,
      budgetMs: options.budgetMs,
    });
    return undefined;
  },
};
