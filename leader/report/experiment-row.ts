/** One experiment of the campaign as the report lists it (report/model.ts builds them). */
export interface ExperimentRow {
  stage: number;
  blueprintId: string;
  configurationId: string;
  seed: number;
  state: string;
  reason: string | undefined;
  final: number | undefined;
  best: number | undefined;
  bestStep: number | undefined;
  area: number | undefined;
  /** The run's score when it counts (succeeded with a finite value); undefined otherwise. */
  score: number | undefined;
  gpuHours: number | undefined;
  link: string | undefined;
}
