import { isLossMetric } from "./loss-metrics.ts";

/**
 * Classifies why an attempt failed, from facts the supervisor saw: the log tail, the exit
 * code or signal, non-finite metrics, a stall. This is the one place that reads foreign
 * error text; the rules are data, checked in order, first match wins, and each carries the
 * evidence (the log line) that made it match so attempts.md can quote it.
 */
export type FailureClass =
  | "out_of_memory"
  | "kv_cache_memory"
  | "cuda_fault"
  | "distributed_failure"
  | "missing_model"
  | "config_invalid"
  | "nan_loss"
  | "port_in_use"
  | "missing_file"
  | "missing_module"
  | "external_api_rate_limit"
  | "external_api_auth"
  | "killed"
  | "hang"
  | "unknown";

export interface FailureFacts {
  /** The last lines of the attempt's log. */
  logTail: string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** A parsed metric was NaN or infinite (it counts as a NaN loss only when `isLossMetric` says so). */
  nonFiniteMetric?: { step: number; key: string };
  /** Loss metric names the blueprint declares (`loss_metrics`), on top of the loss-like names. */
  lossMetrics?: readonly string[];
  /**
   * No exit file although its folder is there: the process group was killed as a whole (by
   * whom and with which signal is unknown). Counts as `killed`, never as a named signal.
   */
  groupKilled?: boolean;
  /** The supervisor saw no output or step for longer than the stall limit. */
  stalled?: boolean;
  /** Which supervision rule fired for a stall, with its limit and what was seen (for the evidence). */
  stallDetail?: string;
  /**
   * Whether the kernel's OOM killer fired while the attempt ran (the `oom_kill` counter of
   * /proc/vmstat moved); undefined when that cannot be known. Needed because the shell
   * that reports a SIGKILL prints "Killed" whoever sent the signal.
   */
  oomKiller?: "seen" | "not_seen";
}

export interface FailureRule {
  id: string;
  failureClass: FailureClass;
  /** Regular expression sources matched against each log line, case-insensitive. */
  logPatterns?: string[];
  exitCodes?: number[];
  signals?: NodeJS.Signals[];
  /** Skip the rule when the OOM killer is known not to have fired. */
  needsOomKiller?: boolean;
}

export interface Classification {
  failureClass: FailureClass;
  ruleId: string;
  /** The log line or fact that decided it. */
  evidence: string;
}

/**
 * Order matters: the first rule with a matching line wins, so a specific cause beats the
 * generic symptom it drags along. A CUDA fault or an OOM on one rank makes the other ranks'
 * NCCL watchdogs time out, so both come before the distributed rule; a Hugging Face "401
 * Repository Not Found" is a missing model, not a bad API key; vLLM's KV-cache messages
 * mention memory but are not an OOM a smaller batch fixes. Every pattern is a plain
 * regular expression without nested quantifiers (linear on a log line).
 */
export const defaultFailureRules: FailureRule[] = [
  {
    id: "vllm-kv-cache-max-model-len",
    failureClass: "kv_cache_memory",
    logPatterns: [String.raw`max seq len \(\d+\) is larger than the maximum number of tokens that can be stored in KV cache`],
  },
  {
    id: "vllm-no-cache-blocks",
    failureClass: "kv_cache_memory",
    logPatterns: [
      String.raw`No available memory for the cache blocks`,
      String.raw`# GPU blocks: 0\b`,
      String.raw`Insufficient memory for KV cache`,
      String.raw`not enough KV cache space`,
    ],
  },
  {
    id: "cuda-oom",
    failureClass: "out_of_memory",
    logPatterns: [
      String.raw`CUDA out of memory`,
      String.raw`torch\.(cuda\.)?OutOfMemoryError`,
      String.raw`RuntimeError: [^\n]{0,300}out of memory`,
      String.raw`CUBLAS_STATUS_ALLOC_FAILED`,
      String.raw`JavaScript heap out of memory`,
      String.raw`MemoryError`,
      String.raw`Cannot allocate memory`,
    ],
  },
  {
    // The host ran out of memory and a supervisor said so in the log: Ray's memory monitor
    // or the kernel's own message. No exit code needed: the text names the OOM killer.
    id: "host-oom-in-log",
    failureClass: "out_of_memory",
    logPatterns: [
      String.raw`ray\.exceptions\.OutOfMemoryError`,
      String.raw`Task was killed due to the node running low on memory`,
      String.raw`killed due to memory pressure \(OOM\)`,
      String.raw`Out of memory: Killed process \d+`,
      String.raw`oom[-_]kill(er)? (invoked|killed|event)`,
      String.raw`DataLoader worker \(pid \d+\) is killed by signal: Killed`,
      // Ray's raylet when an actor's worker died (verl): the OOM killer is the first cause it
      // names, and the one a smaller batch fixes; a plain retry with the same batch dies again.
      String.raw`killed by SIGKILL by OOM killer due to high memory usage`,
      String.raw`Worker exit type: NODE_OUT_OF_MEMORY`,
    ],
  },
  {
    id: "oom-killer",
    failureClass: "out_of_memory",
    exitCodes: [137],
    needsOomKiller: true,
    logPatterns: [String.raw`\bKilled\b$`, String.raw`: \d+ Killed\s`, String.raw`oom[-_ ]kill`],
  },
  {
    id: "cuda-fault",
    failureClass: "cuda_fault",
    logPatterns: [
      String.raw`an illegal memory access was encountered`,
      String.raw`device-side assert(ion)? triggered`,
      String.raw`an illegal instruction was encountered`,
      String.raw`CUDA error: misaligned address`,
      String.raw`CUDA error: unspecified launch failure`,
      String.raw`\.cu:\d+: [^\n]{0,300}Assertion`,
    ],
  },
  {
    // a3r's own swarm server refusing its config (an override beyond the schema's bound):
    // the line names the field and the bound, and no retry changes it.
    id: "config-invalid",
    failureClass: "config_invalid",
    logPatterns: [String.raw`\[CONFIG_INVALID\][^\n]{0,400}`, String.raw`the engine failed to boot: [^\n]{0,400}`],
  },
  {
    // The worker's own refusal of an attempt's final command line (worker/launch/attempt-launch.ts):
    // the same command would be refused again, so it fails at once.
    id: "command-forbidden",
    failureClass: "config_invalid",
    logPatterns: [String.raw`\[COMMAND_FORBIDDEN\][^\n]{0,400}`],
  },
  {
    id: "missing-model",
    failureClass: "missing_model",
    logPatterns: [
      String.raw`does not appear to have a file named (config\.json|pytorch_model\.bin|model\.safetensors|tokenizer)`,
      String.raw`RepositoryNotFoundError`,
      String.raw`Repository Not Found for url: https?://huggingface\.co`,
      String.raw`is not a local folder and is not a valid model identifier`,
      String.raw`Can't load (the )?(tokenizer|config|model) for`,
      String.raw`GatedRepoError`,
      String.raw`Error no file named (config\.json|pytorch_model\.bin|model\.safetensors)`,
    ],
  },
  {
    id: "non-finite-loss",
    failureClass: "nan_loss",
    logPatterns: [
      // loss:nan, train/loss=nan, actor/pg_loss:nan, loss_net: nan; not grad_norm: nan after a finite loss.
      String.raw`\bloss\b[^\n:=]{0,20}[:=]\s*-?(nan|inf)\b`,
      String.raw`\b[\w/]{0,40}_loss[\w/]{0,20}\s?[:=]\s*-?(nan|inf)\b`,
      String.raw`\bloss_(?!scale)[\w]{1,20}\s?[:=]\s*-?(nan|inf)\b`,
      String.raw`(Loss|gradient|grad_norm) (is|became) (NaN|nan|inf)`,
      String.raw`non-finite (loss|gradient)`,
      String.raw`FloatingPointError`,
    ],
  },
  {
    id: "port-in-use",
    failureClass: "port_in_use",
    logPatterns: [String.raw`EADDRINUSE`, String.raw`Address already in use`, String.raw`port \d+ is (already )?in use`],
  },
  {
    id: "missing-module",
    failureClass: "missing_module",
    logPatterns: [
      String.raw`ModuleNotFoundError`,
      String.raw`ImportError: (cannot import name|No module named)`,
      String.raw`Cannot find module`,
      String.raw`ERR_MODULE_NOT_FOUND`,
      String.raw`command not found`,
    ],
  },
  {
    // sh/dash when the command's program (an interpreter such as `python3.99`) does not
    // exist: `sh: 1: python3.99: not found`, exit 127. Both must agree.
    id: "program-not-found",
    failureClass: "missing_module",
    exitCodes: [127],
    logPatterns: [String.raw`\S: not found\s*$`],
  },
  {
    id: "missing-file",
    failureClass: "missing_file",
    logPatterns: [String.raw`FileNotFoundError`, String.raw`No such file or directory`, String.raw`ENOENT`],
  },
  {
    id: "api-auth",
    failureClass: "external_api_auth",
    logPatterns: [
      String.raw`\b401\b[^\n]{0,300}(unauthori[sz]ed|invalid[^\n]{0,40}key|incorrect api key|authentication)`,
      String.raw`\b403\b[^\n]{0,300}(forbidden|permission|not supported|access denied)`,
      String.raw`AuthenticationError`,
      String.raw`invalid[_ ]api[_ ]key`,
      String.raw`Incorrect API key provided`,
      String.raw`authentication_error`,
      String.raw`PermissionDeniedError`,
      String.raw`unsupported_country_region_territory`,
    ],
  },
  {
    id: "api-rate-limit",
    failureClass: "external_api_rate_limit",
    logPatterns: [
      String.raw`\b429\b`,
      String.raw`RateLimitError`,
      String.raw`rate[_ ]limit(ed)?( exceeded| reached)?`,
      String.raw`insufficient_quota`,
      String.raw`quota (exceeded|exhausted)`,
      String.raw`Too Many Requests`,
      String.raw`overloaded_error`,
      String.raw`\b529\b[^\n]{0,100}Overloaded`,
      String.raw`RESOURCE_EXHAUSTED`,
    ],
  },
  {
    // A collective that never completed, or a rank that died and took the job down with
    // SIGABRT (exit 134; torchrun reports it as exitcode -6). The cause is usually a peer or
    // the fabric, not the configuration: resume from the last checkpoint.
    id: "distributed-failure",
    failureClass: "distributed_failure",
    logPatterns: [
      String.raw`Watchdog caught collective operation timeout`,
      String.raw`ProcessGroupNCCL's watchdog got stuck`,
      String.raw`NCCL communicator was aborted`,
      String.raw`DistBackendError`,
      String.raw`ncclRemoteError`,
      String.raw`ncclSystemError`,
      String.raw`NCCL error[^\n]{0,300}(unhandled system error|remote process exited)`,
      String.raw`Signal 6 \(SIGABRT\) received by PID`,
      String.raw`exitcode\s*:\s*-6\b`,
      String.raw`Timed out waiting for [^\n]{0,100}(barrier|rendezvous|store)`,
    ],
  },
  { id: "sigabrt", failureClass: "distributed_failure", signals: ["SIGABRT"], exitCodes: [134] },
  { id: "stalled", failureClass: "hang" },
  { id: "killed-by-signal", failureClass: "killed", signals: ["SIGKILL", "SIGTERM", "SIGINT", "SIGHUP"], exitCodes: [137, 143, 130] },
];

function findLine(logTail: string, patterns: RegExp[]): string | undefined {
  const lines = logTail.split(/\r?\n/);
  // The newest line is the likeliest cause: search from the end.
  for (let index = lines.length - 1; index >= 0; index -= 1) {
    const line = lines[index]!;
    if (patterns.some((pattern) => pattern.test(line))) return line.trim();
  }
  return undefined;
}

export function classifyFailure(facts: FailureFacts, rules: FailureRule[] = defaultFailureRules): Classification {
  for (const rule of rules) {
    if (rule.needsOomKiller && facts.oomKiller === "not_seen") continue;
    if (rule.id === "stalled") {
      if (facts.stalled)
        return { failureClass: rule.failureClass, ruleId: rule.id, evidence: facts.stallDetail ?? "no new output or step within the stall limit" };
      continue;
    }
    if (rule.failureClass === "nan_loss" && facts.nonFiniteMetric && isLossMetric(facts.nonFiniteMetric.key, facts.lossMetrics)) {
      const { step, key } = facts.nonFiniteMetric;
      return { failureClass: "nan_loss", ruleId: rule.id, evidence: `metric ${key} was not finite at step ${step}` };
    }
    const patterns = (rule.logPatterns ?? []).map((source) => new RegExp(source, "i"));
    const exitMatches = rule.exitCodes?.includes(facts.exitCode ?? Number.NaN) ?? false;
    const signalMatches = facts.signal !== null && (rule.signals?.includes(facts.signal) ?? false);
    if (rule.exitCodes && patterns.length > 0) {
      // Both must agree (exit 137 alone is any SIGKILL; with "Killed" it is the OOM killer).
      const line = exitMatches ? findLine(facts.logTail, patterns) : undefined;
      if (line) return { failureClass: rule.failureClass, ruleId: rule.id, evidence: `${line} (exit ${facts.exitCode})` };
      continue;
    }
    if (patterns.length > 0) {
      const line = findLine(facts.logTail, patterns);
      if (line) return { failureClass: rule.failureClass, ruleId: rule.id, evidence: line };
      continue;
    }
    if (signalMatches) return { failureClass: rule.failureClass, ruleId: rule.id, evidence: `terminated by ${facts.signal}` };
    if (rule.failureClass === "killed" && facts.groupKilled && facts.signal === null && facts.exitCode === null)
      return { failureClass: rule.failureClass, ruleId: rule.id, evidence: "the process group was killed as a whole (no exit file; the signal is unknown)" };
    if (exitMatches) return { failureClass: rule.failureClass, ruleId: rule.id, evidence: `exit code ${facts.exitCode}` };
  }
  const lastLine = facts.logTail.trim().split(/\r?\n/).pop() ?? "";
  return {
    failureClass: "unknown",
    ruleId: "none",
    evidence: lastLine
      ? `${lastLine} (exit ${facts.exitCode ?? facts.signal ?? "unknown"})`
      : `exit ${facts.exitCode ?? facts.signal ?? "unknown"} with no output`,
  };
}
