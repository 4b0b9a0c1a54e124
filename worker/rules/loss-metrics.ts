/**
 * Which metrics are a loss or an objective, so that only their NaN stops a run. Trainers
 * report many numbers that go non-finite harmlessly (a grad-norm the optimizer clips, a
 * reward mean over zero episodes, an entropy of an empty batch); only a non-finite loss
 * means training diverged. A metric counts when the blueprint names it in `loss_metrics`
 * (front matter, exact keys) or when its last name segment (after `/` or `.`) reads as a
 * loss: `loss`, `pg_loss`, `actor/pg_loss`, `critic/vf_loss`, `train/loss`, `loss_net`,
 * `objective`. `loss_scale` (the fp16 loss scaler) is not a loss.
 */
export function isLossMetric(key: string, declared: readonly string[] = []): boolean {
  if (declared.includes(key)) return true;
  const segment = (key.split(/[/.]/).pop() ?? key).toLowerCase();
  if (segment === "loss_scale" || segment === "loss_scaler") return false;
  return segment === "loss" || segment.endsWith("_loss") || segment.startsWith("loss_") || segment === "objective" || segment.endsWith("_objective");
}

/** The blueprint's declared loss metrics (`loss_metrics: [actor/pg_loss]`); [] when absent or malformed. */
export function lossMetricsOf(frontMatter: Record<string, unknown>): string[] {
  const value = frontMatter.loss_metrics;
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string" && item.length > 0) : [];
}

/** Splits a metric point's non-finite values into the loss ones (they stop the run) and the others (warnings). */
export function nonFiniteMetrics(values: Record<string, number>, declared: readonly string[] = []): { loss: string[]; other: string[] } {
  const loss: string[] = [];
  const other: string[] = [];
  for (const [key, value] of Object.entries(values)) {
    if (Number.isFinite(value)) continue;
    (isLossMetric(key, declared) ? loss : other).push(key);
  }
  return { loss, other };
}
