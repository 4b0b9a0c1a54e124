/**
 * Classifies why an attempt failed, from facts the supervisor saw: the log tail, the exit
 * code or signal, non-finite metrics, a stall. This is the one place that reads foreign
 * error text; the rules are data, checked in order, first match wins, and each carries the
 * evidence (the log line) that made it match so attempts.md can quote it.
 */
export type FailureClass =
  | "out_of_memory"
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
  /** A parsed metric was NaN or infinite. */
  nonFiniteMetric?: { step: number; key: string };
  /** The supervisor saw no output or step for longer than the stall limit. */
  stalled?: boolean;
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

export const defaultFailureRules: FailureRule[] = [
  {
    id: "cuda-oom",
    failureClass: "out_of_memory",
    logPatterns: [
      String.raw`CUDA out of memory`,
      String.raw`torch\.(cuda\.)?OutOfMemoryError`,
      String.raw`RuntimeError: .*out of memory`,
      String.raw`CUBLAS_STATUS_ALLOC_FAILED`,
      String.raw`JavaScript heap out of memory`,
      String.raw`MemoryError`,
      String.raw`Cannot allocate memory`,
    ],
  },
  { id: "oom-killer", failureClass: "out_of_memory", exitCodes: [137], needsOomKiller: true, logPatterns: [String.raw`\bKilled\b$`, String.raw`oom[-_ ]kill`] },
  {
    id: "non-finite-loss",
    failureClass: "nan_loss",
    logPatterns: [
      String.raw`\bloss\b[^\n]{0,20}?[:=]\s*-?(nan|inf)\b`,
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
    id: "missing-file",
    failureClass: "missing_file",
    logPatterns: [String.raw`FileNotFoundError`, String.raw`No such file or directory`, String.raw`ENOENT`],
  },
  {
    id: "api-auth",
    failureClass: "external_api_auth",
    logPatterns: [
      String.raw`\b401\b.*(unauthori[sz]ed|invalid.*key)`,
      String.raw`AuthenticationError`,
      String.raw`invalid[_ ]api[_ ]key`,
      String.raw`PermissionDeniedError`,
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
    ],
  },
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
      if (facts.stalled) return { failureClass: rule.failureClass, ruleId: rule.id, evidence: "no new output or step within the stall limit" };
      continue;
    }
    if (rule.failureClass === "nan_loss" && facts.nonFiniteMetric) {
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
    if (exitMatches) return { failureClass: rule.failureClass, ruleId: rule.id, evidence: `exit code ${facts.exitCode}` };
  }
  const lastLine = facts.logTail.trim().split(/\r?\n/).pop() ?? "";
  return {
    failureClass: "unknown",
    ruleId: "none",
    evidence: lastLine ? `${lastLine} (exit ${facts.exitCode ?? facts.signal})` : `exit ${facts.exitCode ?? facts.signal} with no output`,
  };
}
