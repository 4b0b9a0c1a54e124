import type { FailureFacts } from "../../rules/failure-classifier.ts";
import { collectExit, isRecordRunning } from "../../launch/launched-process.ts";
import type { SupervisionCheck } from "../supervision-check.ts";

/**
 * Classic runs: watches the command's process group. Decides, once it has ended (its exit
 * collected, the last metrics read): a non-finite loss in those last metrics goes first (the
 * poll starts over, so the non-finite-loss check fails it); otherwise exit 0 is `succeeded`,
 * anything else `failed` with the exit code or signal (and the OOM killer's fact) for the classifier.
 */
export const mainExitCheck: SupervisionCheck = {
  name: "main process exit",
  start: (watch) => {
    if (watch.options.mode !== "classic") return undefined;
    return async () => {
      const { main, merger } = watch;
      if (await isRecordRunning(main)) return undefined;
      const exit = await collectExit(main, watch.options.settings.gracePeriodMs);
      await watch.readMetrics({ drain: true });
      if (watch.nonFinite) return "poll-again";
      if (exit.exitCode === 0) return { kind: "succeeded", detail: "the command exited 0", lastStep: merger.lastStep };
      const facts: FailureFacts = { logTail: watch.tailOf(watch.mainLog), ...watch.exitFacts(exit), ...(exit.groupKilled ? { groupKilled: true } : {}) };
      return {
        kind: "failed",
        detail: exit.signal
          ? `the command was killed by ${exit.signal}`
          : exit.unknown
            ? `the command ended, how is unknown (${exit.unknown})`
            : `the command exited ${exit.exitCode}`,
        facts,
        lastStep: merger.lastStep,
      };
    };
  },
};
