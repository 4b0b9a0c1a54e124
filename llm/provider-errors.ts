import { A3rError, type ErrorCode } from "../core/errors.ts";
import { redactSecrets, secretValuesFromEnv } from "../core/redact.ts";
import type { CallSignal } from "./call-signal.ts";

type ErrorClass = abstract new (...args: never[]) => Error;

/** The error classes both SDKs (Anthropic and OpenAI, same generator) export. */
export interface SdkErrorClasses {
  APIError: ErrorClass;
  APIUserAbortError: ErrorClass;
  APIConnectionError: ErrorClass;
  APIConnectionTimeoutError: ErrorClass;
}

export interface ProviderErrorContext {
  provider: string;
  /** The variable or option a person fixes when the key is refused. */
  apiKeyName: string;
  classes: SdkErrorClasses;
  callSignal: CallSignal;
  /** Values that must never appear in a message (the API key). */
  secrets: string[];
}

/** One place that decides what an HTTP status means for us; the codes say whether to retry. */
export function codeForHttpStatus(status: number): ErrorCode {
  if (status === 401 || status === 403) return "LLM_AUTH_FAILED";
  if (status === 429) return "LLM_RATE_LIMITED";
  if (status === 408) return "LLM_TIMEOUT";
  if (status >= 500) return "LLM_UNAVAILABLE";
  return "LLM_BAD_REQUEST";
}

const hints: Partial<Record<ErrorCode, (context: ProviderErrorContext) => string>> = {
  LLM_AUTH_FAILED: (context) => `Check the API key given to the ${context.provider} provider (${context.apiKeyName}).`,
  LLM_RATE_LIMITED: () => "Wait and try again later, or lower the request rate.",
  LLM_UNAVAILABLE: (context) => `The ${context.provider} endpoint is unreachable or failing; check the base URL or try again later.`,
  LLM_TIMEOUT: () => "Raise the deadline of a call (A3R_LLM_TIMEOUT, or the config's timeoutMs), or try again later.",
  LLM_BAD_REQUEST: () => "The provider rejected the request: check the model name and the request parameters.",
};

/**
 * Classifies an SDK error where it is raised, so that callers only read the code. The
 * abort cause wins over the error class: an SDK reports our deadline and a caller's abort
 * alike, and only the call signal knows which one it was. Messages are redacted, and the
 * SDK error is not kept as `cause` because its body may echo the key.
 */
export function toProviderError(error: unknown, context: ProviderErrorContext): A3rError {
  if (error instanceof A3rError) return error;
  const { classes, provider } = context;
  const make = (code: ErrorCode, message: string, details: Record<string, unknown> = {}): A3rError =>
    new A3rError(code, redactSecrets(`${provider}: ${message}`, [...context.secrets, ...secretValuesFromEnv()]), {
      hint: hints[code]?.(context),
      details: { provider, ...details },
    });

  const cause = context.callSignal.cause();
  if (cause === "caller") return make("LLM_ABORTED", "the call was aborted by the caller");
  if (cause === "deadline") return make("LLM_TIMEOUT", "the call did not finish before its deadline");
  if (error instanceof classes.APIUserAbortError) return make("LLM_ABORTED", "the call was aborted");
  if (error instanceof classes.APIConnectionTimeoutError) return make("LLM_TIMEOUT", "the request timed out");
  if (error instanceof classes.APIConnectionError) return make("LLM_UNAVAILABLE", `cannot connect (${error.message})`);
  if (error instanceof classes.APIError) {
    const status = (error as { status?: unknown }).status;
    if (typeof status === "number") {
      return make(codeForHttpStatus(status), `HTTP ${status}: ${error.message}`, { status });
    }
    return make("LLM_UNAVAILABLE", error.message);
  }
  if (error instanceof Error && error.name === "AbortError") return make("LLM_ABORTED", "the call was aborted");
  return new A3rError("INTERNAL", redactSecrets(`${provider}: unexpected error: ${String(error)}`, context.secrets), {
    cause: error,
    details: { provider },
  });
}
