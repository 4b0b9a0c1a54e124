import type { z } from "zod";
import type { Blueprint, CommandRule } from "../../blueprints/index.ts";
import type { LedgerSink, ResultDirWriter } from "../../campaign/index.ts";
import type { ChatModel } from "../../llm/index.ts";
import type { ProgressReporter } from "../supervise/progress-reporter.ts";
import type { RunMemory } from "./run-memory.ts";
import type { WorkerSettings } from "../rules/worker-settings.ts";
import type { SandboxDecision } from "../launch/sandbox-plan.ts";

/**
 * Everything one worker knows about the run it owns while it drives it: the blueprint and
 * its knobs, the lease-holding writer, the memory mirrored into status.json, and the
 * attempt in progress. Left out: anything another worker needs (that is in status.json).
 */
export interface RunContext {
  blueprint: Blueprint;
  resultDir: string;
  settings: WorkerSettings;
  writer: ResultDirWriter;
  memory: RunMemory;
  env: NodeJS.ProcessEnv;
  model: ChatModel | null;
  progress: ProgressReporter;
  gpus?: string;
  /** Aborted to cancel the run (SIGTERM or SIGINT to the worker). */
  signal?: AbortSignal;
  /** Where the run's GPU-hours are booked when it ends (the campaign ledger). */
  ledger?: LedgerSink;
  commandRules?: readonly CommandRule[];
  runStartedAtMs: number;
  attempt: number;
  /** The engine's config schema for this blueprint's mode, where the caller gave one (blueprints/overrides/). */
  configSchema?: z.ZodType;
  /** The run's sandbox (launch/sandbox-plan.ts): decided once, when the worker starts. */
  sandbox?: SandboxDecision;
  /** Why the run must not start under the sandbox settings it was given (a problem of prepare()). */
  sandboxRefusal?: string;
  /** swarm: the run's admin token (launch/swarm-admin-token.ts); held in memory only, never in status.json. */
  swarmAdminToken?: string;
}
