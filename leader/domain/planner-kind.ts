import type { A3rError } from "../../core/errors.ts";
import type { Planner } from "./planner.ts";
import type { Topic } from "./topic.ts";

/**
 * The planner plug-in contract: what `--planner <name>` may name. Each planner declares
 * itself in its own folder (`planners/heuristic/heuristic-kind.ts`,
 * `planners/llm/llm-kind.ts`) and is listed once in `planners/registry.ts`; the CLI's
 * `--planner` parsing, the `planner:` line, the topic check and the planner a campaign
 * is resumed with all come from there.
 */
export interface PlannerKind {
  /** The `--planner` value, and the name a campaign records in `campaign.created` ("auto" is taken). */
  readonly name: string;
  /** A few words for `--help`: "a language model; see README". */
  readonly description: string;
  /** `--planner auto` picks, among the planners that have a rank and are ready, the one with the highest. */
  readonly autoRank?: number;
  /**
   * Whether this environment can run it (the llm planner needs a configured model); absent =
   * always. It may throw for a misconfiguration that `auto` must not quietly skip (a
   * provider name that is no provider).
   */
  readiness?(env: NodeJS.ProcessEnv): PlannerReadiness;
  /** Its requirement in words, for `--help`: "a model is configured". */
  readonly readyWhen?: string;
  /** What a topic still lacks for this planner to plan it; empty (or absent) when it can. */
  topicNeeds?(topic: Topic): string[];
  /** The planner of one campaign (new or resumed). */
  create(context: CampaignPlannerContext): Planner | Promise<Planner>;
}

export type PlannerReadiness =
  /** `detail` goes into the `planner:` line: "anthropic claude-sonnet-4-6 from ANTHROPIC_API_KEY". */
  | { ready: true; detail: string }
  /** `detail` says what to set; `refusal` is the error when it was asked for by name (`asked`: "--planner llm"). */
  | { ready: false; detail: string; refusal(asked: string): A3rError };

/** What a planner may use for its campaign. */
export interface CampaignPlannerContext {
  campaignId: string;
  topic: Topic;
  /** The campaign's copy of its topic (where budgets are raised). */
  topicFile: string;
  /** The campaign's events.jsonl. */
  eventsFile: string;
  /** The campaign's ledger.jsonl: model calls are booked there. */
  ledgerFile: string;
  env: NodeJS.ProcessEnv;
  /**
   * The leader is going to move (a new campaign, a review answer, a resume that is not just
   * a look at a paused or finished one): a planner that cannot run here refuses now, before
   * anything is recorded; otherwise it may wait for its first call.
   */
  willRun: boolean;
}
