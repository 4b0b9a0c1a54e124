import { readStopRequest, type StopRequest } from "../../../campaign/index.ts";
import type { AttemptWatch } from "../attempt-watch.ts";
import type { SupervisionCheck } from "../supervision-check.ts";

/**
 * Watches the result directory for a stop request (`stop-request.json`, campaign/stop-request.ts).
 * Decides: a valid one is recorded first (`run.stop-requested` with the evidence), then every
 * process group is stopped and the attempt ends `stopped_early` with the reason. An invalid
 * one is reported once per problem (`run.stop-request-invalid`) and the run goes on.
 */
export const stopRequestCheck: SupervisionCheck = {
  name: "stop request",
  start: (watch) => {
    let invalidStopRequest: string | undefined;
    /** The stop request in the result directory, if a valid one is there; an invalid one is reported once and ignored. */
    const stopRequested = async () => {
      const { resultDir, writer, attempt, progress } = watch.options;
      if (!resultDir) return undefined;
      const read = await readStopRequest(resultDir);
      if (read.kind === "request") return read.request;
      if (read.kind === "invalid" && read.problem !== invalidStopRequest) {
        invalidStopRequest = read.problem;
        await writer.appendEvent("run.stop-request-invalid", { attempt, problem: read.problem });
        progress.event(`warning: ${read.problem}; the run goes on (a stop request is {"state": "stopped_early", "reason": "..."})`);
      }
      return undefined;
    };
    return async () => {
      const stop = await stopRequested();
      if (!stop) return undefined;
      return stopEarly(watch, stop);
    };
  },
};

async function stopEarly(watch: AttemptWatch, stop: StopRequest) {
  const { writer, attempt, progress } = watch.options;
  // Recorded before the stop, so the evidence survives a worker killed while stopping.
  await writer.appendEvent("run.stop-requested", { attempt, state: stop.state, reason: stop.reason, evidence: stop.evidence, step: watch.merger.lastStep });
  progress.event(`attempt ${attempt}: stop requested (${stop.reason}); stopping the run's processes`);
  await watch.stopAll();
  await watch.readMetrics();
  return { kind: "stopped_early" as const, detail: stop.reason, evidence: stop.evidence, lastStep: watch.merger.lastStep };
}
