/**
 * Records shared by leader, worker and hosts: the campaign store, the result-directory
 * protocol (status.json, lease, finish.flag ...), the append-only event log, the cost
 * ledger, and the audits over all of them.
 */
export type { Finding, FindingSummary, RecordProblem } from "./finding.ts";
export { formatFinding, sortFindings, summarizeFindings } from "./finding.ts";

export type { RunState, TerminalRunState } from "./run-status.ts";
export {
  assertTransition,
  canTransition,
  initialRunState,
  isActiveRunState,
  isRunState,
  isTerminalRunState,
  runStates,
  runStatusTransitions,
  terminalRunStates,
} from "./run-status.ts";

export type { RunStatus, StatusRead } from "./status-file.ts";
export { newRunStatus, parseRunStatus, readRunStatus, runStatusSchema } from "./status-file.ts";
export type { Lease, LeaseHandle, LeaseOptions } from "./lease.ts";
export { acquireLease, holdsLease, isLeaseLive, leaseSchema, readLease, releaseLease, renewLease, withLease } from "./lease.ts";
export type { ResultDirPaths } from "./result-dir-paths.ts";
export { resultDirFileNames, resultDirPaths } from "./result-dir-paths.ts";
export type { ResultDirWriterOptions, StatusChange } from "./result-dir-writer.ts";
export { ResultDirWriter } from "./result-dir-writer.ts";
export type { FinishFlag, ResultDirFile, ResultDirSnapshot } from "./result-dir-reader.ts";
export { looksLikeResultDir, readResultDir } from "./result-dir-reader.ts";
export type { MetricsRead, MetricsRecord, MetricsRecordInput } from "./metrics-log.ts";
export { appendMetrics, makeMetricsRecord, metricsRecordSchema, readMetrics } from "./metrics-log.ts";
export type { AttemptEntry } from "./attempts-log.ts";
export { appendAttempt, formatAttemptEntry } from "./attempts-log.ts";

export type { CampaignEvent, EventEvidence, EventRead } from "./event-log.ts";
export { appendEvent, appendEventOnce, EventLog, eventSchema, makeEvent, readEvents } from "./event-log.ts";
export { appendJsonLine, parseJsonLines, readJsonLines } from "./jsonl-file.ts";

export type {
  GpuLedgerEntry,
  KnownLedgerRole,
  LedgerEntry,
  LedgerEntryInput,
  LedgerRead,
  LedgerRole,
  LedgerSink,
  LedgerSummary,
  LlmLedgerEntry,
  RoleTotals,
} from "./ledger.ts";
export { JsonlLedger, ledgerEntrySchema, ledgerRoles, parseLedgerEntry, readLedger, summarizeLedger } from "./ledger.ts";

export { assertCampaignId, assertSafeBlueprintId, campaignIdPattern, isCampaignId, slugifyCampaignId } from "./campaign-id.ts";
export type { CampaignPaths, StagePaths } from "./campaign-paths.ts";
export { campaignFileNames, campaignPaths, campaignPathsAt, stagePaths } from "./campaign-paths.ts";
export type { Campaign, CampaignListing, StageListing } from "./campaign-store.ts";
export { campaignAt, createCampaign, listCampaigns, listStages, loadCampaign } from "./campaign-store.ts";

export type { ResultDirAuditOptions } from "./audit-result-dir.ts";
export { auditResultDir, auditResultDirSnapshot, defaultHeartbeatMaxAgeMs } from "./audit-result-dir.ts";
export type { CampaignAuditOptions } from "./audit-campaign.ts";
export { auditCampaign, blueprintExplainedKinds, blueprintPendingKinds } from "./audit-campaign.ts";
export { leaderDatabaseProblem } from "./leader-database.ts";
export type { AuditReport, AuditTarget, AuditTargetKind } from "./audit-paths.ts";
export { auditPaths, auditTarget, classifyAuditPath } from "./audit-paths.ts";
export type { BlueprintInspector } from "./blueprint-inspector.ts";
export { renderSpendingByRole } from "./llm-spending.ts";
export { findCampaignOf } from "./campaign-of-run.ts";
export type { StopRequest, StopRequestRead } from "./stop-request.ts";
export { readStopRequest, stopRequestFileName, stopRequestPath, stopRequestSchema, writeStopRequest } from "./stop-request.ts";
