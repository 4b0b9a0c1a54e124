/**
 * One catalogue of stable error codes. A code is a plain string so that it survives JSON,
 * SSH and Redis unchanged; whether it is worth retrying is decided here, where the error
 * is defined, and callers only read the flag (never the message text).
 */
export const errorCatalogue = {
  USAGE: { retryable: false, user: true },
  FILE_NOT_FOUND: { retryable: false, user: true },
  FILE_UNREADABLE: { retryable: false, user: true },
  FILE_TOO_LARGE: { retryable: false, user: true },
  FILE_BINARY: { retryable: false, user: true },
  YAML_INVALID: { retryable: false, user: true },
  SCHEMA_INVALID: { retryable: false, user: true },
  BLUEPRINT_INVALID: { retryable: false, user: true },
  TOPIC_INVALID: { retryable: false, user: true },
  STATUS_TRANSITION_ILLEGAL: { retryable: false, user: false },
  CAMPAIGN_ID_INVALID: { retryable: false, user: true },
  CAMPAIGN_NOT_FOUND: { retryable: false, user: true },
  CAMPAIGN_NOT_REOPENABLE: { retryable: false, user: true },
  CAMPAIGN_EXISTS: { retryable: false, user: true },
  /** runs/<id>/leader.sqlite cannot be read (not SQLite, or damaged); `a3r resume ID --rebuild` starts a fresh one. */
  LEADER_CHECKPOINT_UNREADABLE: { retryable: false, user: true },
  BLUEPRINT_ID_UNSAFE: { retryable: false, user: true },
  PATH_KIND_UNKNOWN: { retryable: false, user: true },
  LEASE_HELD: { retryable: true, user: false },
  LEASE_LOST: { retryable: false, user: false },
  LOCK_TIMEOUT: { retryable: true, user: false },
  RUN_NOT_FINISHED: { retryable: false, user: false },
  CONFIG_INVALID: { retryable: false, user: true },
  /** An attempt's final command line (its placeholders filled) is refused by the command policy. */
  COMMAND_FORBIDDEN: { retryable: false, user: true },
  /** `sandbox: bwrap` was asked for, but bubblewrap is missing or cannot create its namespaces here. */
  SANDBOX_UNAVAILABLE: { retryable: false, user: true },
  LLM_CONFIG_INVALID: { retryable: false, user: true },
  LLM_AUTH_FAILED: { retryable: false, user: true },
  LLM_RATE_LIMITED: { retryable: true, user: false },
  LLM_UNAVAILABLE: { retryable: true, user: false },
  LLM_TIMEOUT: { retryable: true, user: false },
  LLM_ABORTED: { retryable: false, user: false },
  LLM_BAD_REQUEST: { retryable: false, user: false },
  LLM_OUTPUT_INVALID: { retryable: false, user: false },
  LLM_SCRIPT_EXHAUSTED: { retryable: false, user: true },
  LLM_SCRIPT_MISMATCH: { retryable: false, user: true },
  LLM_BUDGET_EXCEEDED: { retryable: false, user: true },
  /** A planner's answer that is well-formed but unusable (unknown knob, id, prediction target). */
  PLANNER_OUTPUT_INVALID: { retryable: false, user: false },
  /** `a3r resume --approve/--instruct` on a campaign that waits for no review, or a bad answer. */
  REVIEW_NOT_PENDING: { retryable: false, user: true },
  SWARM_UNREACHABLE: { retryable: true, user: true },
  SWARM_REQUEST_REFUSED: { retryable: false, user: true },
  HOST_UNKNOWN: { retryable: false, user: true },
  HOST_UNREACHABLE: { retryable: true, user: true },
  /** `a3r stop CAMPAIGN/BLUEPRINT` names a run the campaign never launched. */
  RUN_NOT_FOUND: { retryable: false, user: true },
  HOST_KEY_UNKNOWN: { retryable: false, user: true },
  HOST_KEY_MISMATCH: { retryable: false, user: true },
  SSH_AUTH_FAILED: { retryable: false, user: true },
  SSH_KEY_INVALID: { retryable: false, user: true },
  REMOTE_COMMAND_FAILED: { retryable: false, user: false },
  LAUNCH_FAILED: { retryable: false, user: false },
  /** The worker could not write its result directory (full, read-only, not its own): it stopped the run. */
  RESULT_DIR_UNWRITABLE: { retryable: false, user: true },
  /** A result directory that is a symbolic link, or whose real path leaves the allowed roots. */
  RESULT_DIR_UNSAFE: { retryable: false, user: true },
  REDIS_UNREACHABLE: { retryable: true, user: true },
  REDIS_POLICY_INVALID: { retryable: false, user: true },
  INTERNAL: { retryable: false, user: false },
} as const satisfies Record<string, { retryable: boolean; user: boolean }>;

export type ErrorCode = keyof typeof errorCatalogue;

export interface A3rErrorOptions {
  /** What the person should do about it, in one sentence. */
  hint?: string;
  /** The file, field or flag the error is about, when there is one. */
  where?: string;
  cause?: unknown;
  /** Extra machine-readable facts (never secrets). */
  details?: Record<string, unknown>;
}

export class A3rError extends Error {
  readonly code: ErrorCode;
  readonly hint: string | undefined;
  readonly where: string | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: A3rErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "A3rError";
    this.code = code;
    this.hint = options.hint;
    this.where = options.where;
    this.details = options.details;
  }

  get retryable(): boolean {
    return errorCatalogue[this.code].retryable;
  }

  /** A user error is the person's to fix: shown without a stack trace. */
  get isUserError(): boolean {
    return errorCatalogue[this.code].user;
  }

  toJSON(): Record<string, unknown> {
    return {
      code: this.code,
      message: this.message,
      retryable: this.retryable,
      ...(this.where ? { where: this.where } : {}),
      ...(this.hint ? { hint: this.hint } : {}),
      ...(this.details ? { details: this.details } : {}),
    };
  }
}

export function isA3rError(value: unknown, code?: ErrorCode): value is A3rError {
  return value instanceof A3rError && (code === undefined || value.code === code);
}
