import { Annotation } from "@langchain/langgraph";
import type { DispatchHost, DispatchRow } from "../../hosts/index.ts";
import type { BlueprintText, FramedQuestion, Planner, ReviewInstruction, StagePlan, StageRecord } from "../domain/planner.ts";
import type { EngineSchemas } from "../design/engine-schema.ts";

/** The graph's state (plain JSON) and the options and review types around it (leader-graph.ts). */
export const LeaderState = Annotation.Root({
  campaignId: Annotation<string>(),
  /** When the leader first framed the campaign (ms since epoch), for the wall-time budget. */
  startedAtMs: Annotation<number | null>(),
  framing: Annotation<FramedQuestion | null>(),
  history: Annotation<StageRecord[]>(),
  /** The stage being designed, dispatched or watched. */
  stagePlan: Annotation<StagePlan | null>(),
  /** The next stage the planner chose in `decide`, not yet written. */
  pending: Annotation<StagePlan | null>(),
  /** The stage's blueprints between design and audit (not yet written). */
  blueprintTexts: Annotation<BlueprintText[]>(),
  blueprintFiles: Annotation<string[]>(),
  /** Commands in the stage's blueprints outside the base experiment and the topic's `commands.allow`. */
  unapprovedCommands: Annotation<string[]>(),
  instructions: Annotation<ReviewInstruction[]>(),
  stop: Annotation<{ reason: string; explanation: string } | null>(),
  reportFile: Annotation<string | null>(),
});

export type LeaderStateValue = typeof LeaderState.State;

/** What a paused campaign waits for (the value given to `interrupt()`). */
export interface ReviewRequest {
  stage: number;
  at: "plan" | "blueprints";
  /** How many instructions came before; distinguishes a second review of the same stage. */
  round: number;
  /** What to read before answering. */
  files: string[];
  /** Why review is asked (review on, or commands that need approval). */
  reason: string;
  commands?: string[];
}

export type ReviewAnswer = { action: "approve" } | { action: "instruct"; text: string };

export interface LeaderOptions {
  runsDir: string;
  campaignId: string;
  planner: Planner;
  hosts: DispatchHost[];
  /** Poll interval while watching; default 2 s. */
  intervalMs?: number;
  onUpdate?: (rows: DispatchRow[]) => void;
  /** Called as each node starts (tests kill the leader at chosen points with it). */
  onNode?: (node: string, state: LeaderStateValue) => void | Promise<void>;
  /**
   * The engines' config schemas by mode (the CLI passes swarm's): refinement stays inside
   * their bounds and the audit checks every blueprint's overrides against them
   * (leader/design/engine-schema.ts). Without one, neither check runs.
   */
  engineSchemas?: EngineSchemas;
}
