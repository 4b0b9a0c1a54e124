/**
 * The worker: executes ONE blueprint on a host, from prepare to finish.flag, with a
 * deterministic supervisor, a data-driven failure classifier and recovery playbook, and a
 * language model only for failures nothing else can classify. Entry point: `runWorker`
 * (or `a3r worker run`). Pure parts (classifier, playbook, plans, predictions, reports)
 * are exported for the leader and for tests.
 */
export type { RunWorkerOptions, WorkerOutcome } from "./run-worker.ts";
export type { RunContext } from "./run/run-context.ts";
export { hasCheckpoint, loadBlueprintForRun, runWorker } from "./run-worker.ts";
export { describeRun } from "./dry-run.ts";
export type { WorkerSettings } from "./rules/worker-settings.ts";
export { defaultWorkerSettings, workerSettingsOf } from "./rules/worker-settings.ts";
export type { AttemptPlan, AttemptPlanInput } from "./launch/attempt-plan.ts";
export { checkpointDirOf, clientCommands, configCopyPath, planAttempt } from "./launch/attempt-plan.ts";
export type { Classification, FailureClass, FailureFacts, FailureRule } from "./rules/failure-classifier.ts";
export { classifyFailure, defaultFailureRules } from "./rules/failure-classifier.ts";
export type { Overrides } from "../blueprints/index.ts";
export type { PlaybookEntry, RecoveryDecision, RecoveryStrategy } from "./rules/recovery-playbook.ts";
export { decideRecovery, defaultPlaybook } from "./rules/recovery-playbook.ts";
export type { LogMetricPattern, MetricPoint } from "./rules/log-metrics.ts";
export { defaultLogMetricPatterns, parseMetricLine } from "./rules/log-metrics.ts";
export type { ParsedPrediction, Verdict } from "./rules/prediction.ts";
export { judgePrediction, parsePrediction } from "./rules/prediction.ts";
export type { AttemptSummary } from "./run/run-memory.ts";
export type { ResultReportInput } from "./finish/result-report.ts";
export { renderCurves, renderResultMarkdown } from "./finish/result-report.ts";
export type { Diagnosis, DiagnosisOutcome } from "./recover/diagnose.ts";
export { diagnoseFailure, diagnosisSchema } from "./recover/diagnose.ts";
export type { ProgressReporter, ProgressSnapshot } from "./supervise/progress-reporter.ts";
export { createProgressReporter, silentProgress } from "./supervise/progress-reporter.ts";
export { agentJetBackoffMs, backoffDetectionDelayMs, backoffLooksWithin } from "./supervise/backoff-polling.ts";
export type { LaunchedProcessRecord } from "./launch/launched-process.ts";
export { isRecordRunning, processStartTime } from "./launch/launched-process.ts";
export { budgetedWorkerModel, readCampaignBudget } from "./recover/campaign-llm.ts";
export type { CampaignBudget } from "./recover/campaign-llm.ts";
export { prepareDemoBlueprint } from "./launch/demo-blueprint.ts";
export type { DemoMode } from "./launch/demo-blueprint.ts";
export { answerApproval, approvalFileName, pendingApprovalOf } from "./recover/approval-gate.ts";
export type { ApprovalDecision, PendingApproval } from "./recover/approval-gate.ts";
