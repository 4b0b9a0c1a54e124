import { printable } from "../../core/printable-text.ts";
import { formatDuration } from "../../core/duration.ts";

/**
 * What a person sees while the worker runs: on a terminal one live line (attempt, step,
 * the blueprint's metric, elapsed against the budget as a bar) rewritten in place; when
 * piped, plain timestamped lines (at most one progress line per `plainEveryMs`) so logs
 * stay readable. Events (launch, failure, recovery) are always their own line.
 */
export interface ProgressSnapshot {
  attempt: number;
  step: number | null;
  metricName?: string;
  metricValue?: number;
  elapsedMs: number;
  budgetMs: number;
}

export interface ProgressReporter {
  progress(snapshot: ProgressSnapshot): void;
  event(message: string): void;
  done(): void;
}

export function budgetBar(elapsedMs: number, budgetMs: number, width = 20): string {
  const fraction = budgetMs > 0 ? Math.min(1, Math.max(0, elapsedMs / budgetMs)) : 0;
  const filled = Math.round(fraction * width);
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`;
}

export function formatProgress(snapshot: ProgressSnapshot): string {
  const metric = snapshot.metricName && snapshot.metricValue !== undefined ? ` ${snapshot.metricName}=${Number(snapshot.metricValue.toPrecision(4))}` : "";
  const step = snapshot.step === null ? "waiting for the first step" : `step ${snapshot.step}`;
  return `attempt ${snapshot.attempt} ${step}${metric} ${budgetBar(snapshot.elapsedMs, snapshot.budgetMs)} ${formatDuration(snapshot.elapsedMs)}/${formatDuration(snapshot.budgetMs)}`;
}

export function createProgressReporter(
  stream: NodeJS.WritableStream & { isTTY?: boolean },
  options: { plainEveryMs?: number; quiet?: boolean } = {},
): ProgressReporter {
  const tty = Boolean(stream.isTTY);
  const plainEveryMs = options.plainEveryMs ?? 30_000;
  let lastPlain = 0;
  let lastKey = "";
  let lineShown = false;
  const clear = () => {
    if (tty && lineShown) stream.write("\r\x1b[2K");
    lineShown = false;
  };
  return {
    progress(snapshot) {
      if (options.quiet) return;
      const text = printable(formatProgress(snapshot));
      if (tty) {
        stream.write(`\r\x1b[2K${text}`);
        lineShown = true;
        return;
      }
      const key = `${snapshot.attempt}:${snapshot.step}`;
      const now = Date.now();
      if (key !== lastKey && now - lastPlain >= plainEveryMs) {
        stream.write(`${new Date().toISOString()} ${text}\n`);
        lastPlain = now;
        lastKey = key;
      }
    },
    event(message) {
      if (options.quiet) return;
      clear();
      stream.write(`${tty ? "" : `${new Date().toISOString()} `}${printable(message)}\n`);
    },
    done() {
      clear();
    },
  };
}

/** For tests and library callers that want no output. */
export const silentProgress: ProgressReporter = { progress() {}, event() {}, done() {} };
