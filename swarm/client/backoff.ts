/** Capped exponential backoff with jitter: attempt 0 waits about `initialMs`. */
export function backoffDelay(attempt: number, options: { initialMs: number; maxMs: number }, random: () => number = Math.random): number {
  const base = Math.min(options.maxMs, options.initialMs * 2 ** Math.min(attempt, 30));
  // Jitter in [0.5, 1.0] × base so a fleet of clients does not retry in lockstep.
  return Math.round(base * (0.5 + random() / 2));
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** True for errors that mean "the server is not reachable right now" (worth retrying). */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === "TimeoutError") return true;
  const cause = (error as { cause?: { code?: string } }).cause;
  const code = cause?.code ?? (error as { code?: string }).code;
  if (
    code &&
    [
      "ECONNREFUSED",
      "ECONNRESET",
      "EPIPE",
      "ENOTFOUND",
      "EAI_AGAIN",
      "ETIMEDOUT",
      "EHOSTUNREACH",
      "UND_ERR_SOCKET",
      "UND_ERR_CONNECT_TIMEOUT",
      "UND_ERR_HEADERS_TIMEOUT",
    ].includes(code)
  )
    return true;
  return error instanceof TypeError && error.message === "fetch failed";
}
