import type { TopicMetric } from "./topic.ts";

/** How a report, an analysis or a blueprint names the score a campaign compares. */
export function scoreLabel(metric: TopicMetric): string {
  return metric.score === "area" ? `${metric.name} (mean level over training)` : `${metric.score} ${metric.name}`;
}
