import { seedScores } from "../domain/configurations.ts";
import { judgeContrasts, type ContrastVerdict } from "../domain/contrast-verdicts.ts";
import type { IncumbentRanking } from "../domain/incumbent.ts";
import type { ConfigurationSummary, StageRecord } from "../domain/planner.ts";
import { parseQuestion } from "../domain/question.ts";
import type { LookLevel } from "../domain/sequential-design.ts";
import type { Topic } from "../domain/topic.ts";
import { campaignRanking, currentLook } from "../planners/heuristic/heuristic-planner.ts";

/**
 * The report's statistics are the planner's at the campaign's last look, so a difference
 * has one interval and one verdict wherever it is shown (answer, comparison table, contrasts,
 * write-up, stage analysis): the incumbent's comparisons are `campaignRanking` (the ranking
 * the heuristic planner stopped or went on from), and the question's contrasts against the
 * baseline are judged at the same look's level (`currentLook`, the sequential design's)
 * with the same pairing by seed (domain/contrast-verdicts.ts). Pure.
 */
export interface ReportStatistics {
  look: LookLevel;
  ranking: IncumbentRanking | undefined;
  contrasts: ContrastVerdict[];
}

export function reportStatistics(topic: Topic, history: readonly StageRecord[], summaries: ConfigurationSummary[]): ReportStatistics {
  const look = currentLook(topic, history);
  const metric = topic.metric;
  if (!metric) return { look, ranking: undefined, contrasts: [] };
  return {
    look,
    ranking: campaignRanking(topic, history),
    contrasts: judgeContrasts(parseQuestion(topic).contrasts, summaries, metric, look.level, seedScores(history)),
  };
}
