import type { SupervisionCheck } from "../supervision-check.ts";

/**
 * Watches the files the worker owns in the result directory (status.json, finish.flag).
 * The run's program may write into its result directory: what it does to those files is
 * undone and reported (`result-dir.foreign-write`, ResultDirWriter.guardOwnedFiles).
 * Decides nothing: a foreign write is never a reason to stop watching.
 */
export const foreignWritesCheck: SupervisionCheck = {
  name: "foreign writes",
  start: (watch) => async () => {
    await watch.options.writer.guardOwnedFiles();
    return undefined;
  },
};
