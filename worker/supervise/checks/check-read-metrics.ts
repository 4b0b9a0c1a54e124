import type { SupervisionCheck } from "../supervision-check.ts";

/**
 * Watches the metric sources (the main log, `$A3R_METRICS_FILE`, a swarm server's
 * `/metrics`) and the clients' logs: records each new step in metrics.jsonl, notes the
 * first non-finite loss and warns about other non-finite metrics (AttemptWatch.readMetrics).
 * Decides nothing itself: the non-finite-loss, first-signal and stall checks judge what it read.
 */
export const readMetricsCheck: SupervisionCheck = {
  name: "read metrics",
  start: (watch) => async () => {
    watch.freshThisPoll = await watch.readMetrics();
    return undefined;
  },
};
