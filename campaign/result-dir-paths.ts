import { join } from "node:path";

/** The file names of a result directory (the layout is in campaign/README.md). Build paths with `resultDirPaths`. */
export const resultDirFileNames = {
  blueprint: "blueprint.md",
  status: "status.json",
  lease: "lease.json",
  metrics: "metrics.jsonl",
  events: "events.jsonl",
  attempts: "attempts.md",
  result: "result.md",
  curves: "curves.svg",
  logs: "logs",
  finishFlag: "finish.flag",
  /** Short-lived mutex around status and lease updates; see directory-lock.ts. */
  lock: ".a3r.lock",
} as const;

export interface ResultDirPaths {
  root: string;
  blueprint: string;
  status: string;
  lease: string;
  metrics: string;
  events: string;
  attempts: string;
  result: string;
  curves: string;
  logs: string;
  finishFlag: string;
  lock: string;
  attemptLog(attempt: number): string;
}

export function resultDirPaths(root: string): ResultDirPaths {
  const at = (name: string) => join(root, name);
  return {
    root,
    blueprint: at(resultDirFileNames.blueprint),
    status: at(resultDirFileNames.status),
    lease: at(resultDirFileNames.lease),
    metrics: at(resultDirFileNames.metrics),
    events: at(resultDirFileNames.events),
    attempts: at(resultDirFileNames.attempts),
    result: at(resultDirFileNames.result),
    curves: at(resultDirFileNames.curves),
    logs: at(resultDirFileNames.logs),
    finishFlag: at(resultDirFileNames.finishFlag),
    lock: at(resultDirFileNames.lock),
    attemptLog: (attempt: number) => join(root, resultDirFileNames.logs, `attempt-${attempt}.log`),
  };
}
