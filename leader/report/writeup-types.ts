import type { StageRecord } from "../domain/planner.ts";
import type { Topic } from "../domain/topic.ts";
import type { CampaignReportModel } from "./model.ts";

/** The write-up as plain data (writeup-model.ts builds it, writeup-render.ts lays it out). */
export type WriteupRun = string | { strong: string } | { text: string; href: string } | { code: string };
export type WriteupBlock =
  | { kind: "paragraph"; runs: WriteupRun[] }
  | { kind: "list"; items: WriteupRun[][] }
  | { kind: "table"; header: string[]; rows: WriteupRun[][][]; anchors?: string[] }
  | { kind: "figures" }
  | { kind: "code"; lines: string[] };

export interface WriteupSection {
  id: string;
  title: string;
  blocks: WriteupBlock[];
}

export interface WriteupDocument {
  title: string;
  campaignId: string;
  sections: WriteupSection[];
}

export interface WriteupInputs {
  model: CampaignReportModel;
  topic: Topic;
  history: StageRecord[];
  /** The campaign folder as the reproduce commands name it (absolute). */
  campaignRoot: string;
}
