import type { CompareLevel, RecordedCall } from "./recorded-call.ts";

export interface Timeline {
  /** Calls in conversation order, each extending the one before; the last is the longest. */
  calls: RecordedCall[];
  /** Calls identical to one in `calls`: counted in this timeline, trained once. */
  duplicates: RecordedCall[];
}

export interface MergeOptions {
  compareLevel: CompareLevel;
  /** Merge across changed tool lists (AgentJet's choice): faster, but the prompts differ. */
  ignoreTools?: boolean;
  /**
   * AgentJet's own rule instead of a3r's (MERGE.md, "agentjet_compat"): latest call first,
   * each absorbs every earlier call whose messages and output are its prefix, compared by
   * content alone (no role, agent or whitespace allowance); of identical calls the last
   * stands. For reproducing an AgentJet run's samples exactly.
   */
  agentjetCompat?: boolean;
}
