import type { SupervisionCheck } from "../supervision-check.ts";

/**
 * Watches the worker's abort signal (SIGTERM or SIGINT to the worker). Decides: once aborted,
 * every process group is stopped, the last metrics are read, and the attempt ends `cancelled`.
 */
export const cancellationCheck: SupervisionCheck = {
  name: "cancellation",
  start: (watch) => async () => {
    const signal = watch.options.signal;
    if (!signal?.aborted) return undefined;
    await watch.stopAll();
    await watch.readMetrics();
    return { kind: "cancelled", detail: `cancelled (${String(signal.reason ?? "aborted")})`, lastStep: watch.merger.lastStep };
  },
};
