import { formatNumber } from "../domain/configurations.ts";
import type { ExperimentRow } from "./experiment-row.ts";

/**
 * The report's "Stopped early" section: what the topic's early stopping cut and when (the
 * rung, the step, the partial scores, in each run's reason as its worker recorded it), and
 * that those runs' compute is counted while their partial scores are not compared. Empty
 * when nothing was cut. `inert` makes file text inert for the format it goes into.
 */
export function stoppedEarlyLines(experiments: readonly ExperimentRow[], inert: (text: string) => string): string[] {
  const cut = experiments.filter((row) => row.state === "stopped_early");
  if (cut.length === 0) return [];
  const gpuHours = cut.reduce((sum, row) => sum + (row.gpuHours ?? 0), 0);
  return [
    "## Stopped early",
    "",
    `Early stopping (the topic's \`early_stop\`) cut ${cut.length} run(s) whose partial score at a rung was clearly below the best's; the comparisons above count only runs that completed. Their compute is in the costs (${gpuHours > 0 ? `${formatNumber(gpuHours)} GPU-hours` : "no GPU"}).`,
    "",
    ...cut.map(
      (row) => `- stage ${row.stage}, ${inert(row.blueprintId)} (${inert(row.configurationId)}, seed ${row.seed}): ${inert(row.reason ?? "stopped early")}`,
    ),
    "",
  ];
}
