/**
 * One abort signal for one call, fed by the caller's signal and by our own deadline, which
 * remembers which of the two fired: a caller's abort is final (LLM_ABORTED), a deadline is
 * worth retrying later (LLM_TIMEOUT). `dispose` must run when the call ends, so that a
 * long-lived caller signal does not collect listeners.
 */
export interface CallSignal {
  readonly signal: AbortSignal;
  /** Why the signal fired, or undefined while it has not. */
  cause(): "caller" | "deadline" | undefined;
  dispose(): void;
}

export function createCallSignal(callerSignal: AbortSignal | undefined, timeoutMs: number | undefined): CallSignal {
  const controller = new AbortController();
  let firedBy: "caller" | "deadline" | undefined;
  const onCallerAbort = (): void => {
    firedBy ??= "caller";
    controller.abort(callerSignal?.reason);
  };
  if (callerSignal?.aborted) onCallerAbort();
  else callerSignal?.addEventListener("abort", onCallerAbort, { once: true });
  const timer =
    timeoutMs === undefined || firedBy
      ? undefined
      : setTimeout(() => {
          firedBy ??= "deadline";
          controller.abort(new Error(`deadline of ${timeoutMs} ms passed`));
        }, timeoutMs);
  return {
    signal: controller.signal,
    cause: () => firedBy,
    dispose() {
      if (timer) clearTimeout(timer);
      callerSignal?.removeEventListener("abort", onCallerAbort);
    },
  };
}
