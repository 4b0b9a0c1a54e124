/**
 * The axis a campaign compares its runs on (`budget_axis` in a topic): what was spent to
 * reach a score. Per step is unfair between configurations that consume different
 * amounts per step (`num_repeat`, batch size, C1 vs C3), so those knobs default to
 * rollout episodes. The curves themselves are built in leader/analysis/budget-axis.ts.
 */
export const budgetAxes = ["steps", "episodes", "tokens", "wall", "gpu_hours"] as const;
export type BudgetAxis = (typeof budgetAxes)[number];

export const axisUnits: Record<BudgetAxis, string> = {
  steps: "optimizer steps",
  episodes: "rollout episodes",
  tokens: "trained tokens",
  wall: "wall seconds",
  gpu_hours: "GPU-hours",
};

/** Knobs that change how much one step consumes: comparing them per step is confounded. */
const consumptionKnobs = /(^|\.)(num_repeat|train_batch_size|batch_size|swarm_mode_sample_collection_method|n_samples|rollout_n|group_size)$/;

/** The axis a topic's knobs make fair when the topic names none. */
export function defaultBudgetAxis(knobs: readonly string[]): BudgetAxis {
  return knobs.some((knob) => consumptionKnobs.test(knob)) ? "episodes" : "steps";
}
