import type { FailureFacts } from "../../rules/failure-classifier.ts";
import type { SupervisionCheck } from "../supervision-check.ts";

/**
 * Watches for a non-finite loss (NaN, Infinity in a loss metric, worker/rules/loss-metrics.ts)
 * among the recorded points. Decides: the first one stops every process group and fails the
 * attempt with `nonFiniteMetric` (its step and key) for the classifier (nan_loss).
 */
export const nonFiniteLossCheck: SupervisionCheck = {
  name: "non-finite loss",
  start: (watch) => async () => {
    const nonFinite = watch.nonFinite;
    if (!nonFinite) return undefined;
    await watch.stopAll();
    const facts: FailureFacts = { logTail: watch.tailOf(watch.mainLog), exitCode: null, signal: null, nonFiniteMetric: nonFinite };
    return { kind: "failed", detail: `metric ${nonFinite.key} was not finite at step ${nonFinite.step}`, facts, lastStep: watch.merger.lastStep };
  },
};
