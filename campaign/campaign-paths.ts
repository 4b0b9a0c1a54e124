import { join } from "node:path";
import { assertCampaignId, assertSafeBlueprintId } from "./campaign-id.ts";

/**
 * The folder layout of a campaign (campaign/README.md). Everyone builds campaign paths through
 * these helpers, so ids are checked once and the layout lives in one place:
 *
 * ```
 * runs/<campaign>/
 *   topic.md  leader.sqlite  events.jsonl  ledger.jsonl  report.md  report.html
 *   stages/<n>/plan.md
 *   stages/<n>/blueprints/<blueprint id>.md
 *   results/<blueprint id>/          (a result directory, see result-dir-paths.ts)
 * ```
 */
export interface StagePaths {
  number: number;
  root: string;
  plan: string;
  blueprints: string;
  blueprint(blueprintId: string): string;
}

export interface CampaignPaths {
  id: string;
  root: string;
  topic: string;
  leaderDatabase: string;
  events: string;
  ledger: string;
  report: string;
  reportHtml: string;
  stages: string;
  results: string;
  stage(number: number): StagePaths;
  result(blueprintId: string): string;
}

export const campaignFileNames = {
  topic: "topic.md",
  leaderDatabase: "leader.sqlite",
  events: "events.jsonl",
  ledger: "ledger.jsonl",
  report: "report.md",
  reportHtml: "report.html",
  stages: "stages",
  results: "results",
  plan: "plan.md",
  blueprints: "blueprints",
} as const;

export function stagePaths(campaignRoot: string, number: number): StagePaths {
  if (!Number.isInteger(number) || number < 0) throw new RangeError(`stage number must be an integer >= 0, got ${number}`);
  const root = join(campaignRoot, campaignFileNames.stages, String(number));
  const blueprints = join(root, campaignFileNames.blueprints);
  return {
    number,
    root,
    plan: join(root, campaignFileNames.plan),
    blueprints,
    blueprint: (blueprintId: string) => {
      assertSafeBlueprintId(blueprintId);
      return join(blueprints, `${blueprintId}.md`);
    },
  };
}

/** Paths of a campaign folder; throws CAMPAIGN_ID_INVALID for an unsafe id. */
export function campaignPaths(runsDir: string, id: string): CampaignPaths {
  assertCampaignId(id);
  return campaignPathsAt(join(runsDir, id), id);
}

/** Paths of a campaign folder given by its location (the audit gets folders, not ids). */
export function campaignPathsAt(root: string, id: string): CampaignPaths {
  const at = (name: string) => join(root, name);
  return {
    id,
    root,
    topic: at(campaignFileNames.topic),
    leaderDatabase: at(campaignFileNames.leaderDatabase),
    events: at(campaignFileNames.events),
    ledger: at(campaignFileNames.ledger),
    report: at(campaignFileNames.report),
    reportHtml: at(campaignFileNames.reportHtml),
    stages: at(campaignFileNames.stages),
    results: at(campaignFileNames.results),
    stage: (number: number) => stagePaths(root, number),
    result: (blueprintId: string) => {
      assertSafeBlueprintId(blueprintId);
      return join(root, campaignFileNames.results, blueprintId);
    },
  };
}
