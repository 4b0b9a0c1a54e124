import type { LogMetricSource } from "./metric-sources.ts";

/**
 * What the reading of a run's logs did to them, said once each as it happens (events.jsonl
 * and the terminal) and summed up when the attempt ends: lines cut for their length
 * (LineSplitter), the file capped (log-cap.ts: how, and how much was dropped), a filesystem
 * where the cap cannot be enforced.
 */
export interface LogNoticeSink {
  event(kind: string, fields: Record<string, unknown>): Promise<unknown>;
  say(line: string): void;
}

export class LogNotices {
  private readonly said = new Set<string>();

  constructor(
    private readonly attempt: number,
    private readonly capLabel: string,
  ) {}

  /** After a read: the first long line, the first cut of the file, a cap that cannot work. */
  async afterRead(source: LogMetricSource, sink: LogNoticeSink): Promise<void> {
    const { follower } = source;
    const stats = follower.lineStats;
    const log = source.name;
    if (stats.longLines > 0 && this.once(`long:${log}`)) {
      await sink.event("log.long-line", {
        attempt: this.attempt,
        log,
        longestLine: stats.longestLine,
        note: "cut: its start and end are read, the middle dropped",
      });
      sink.say(`attempt ${this.attempt}: the ${log} log has a line of ${stats.longestLine} characters; lines that long are cut (start and end kept)`);
    }
    const cap = follower.cap;
    if (cap?.method === "none" && this.once(`unsupported:${log}`)) {
      await sink.event("log.cap-unsupported", {
        attempt: this.attempt,
        log,
        cap: this.capLabel,
        note: "fallocate can neither collapse nor punch this file; the log grows uncapped",
      });
      sink.say(`warning: attempt ${this.attempt}: the ${log} log cannot be capped on this filesystem (worker.log_cap = ${this.capLabel})`);
    }
    if (cap && cap.unreadBytes > 0 && this.once(`unread:${log}`)) {
      await sink.event("log.unread-cut", {
        attempt: this.attempt,
        log,
        cap: this.capLabel,
        unreadBytes: cap.unreadBytes,
        note: "the run wrote faster than the worker reads; output it had not read was cut to keep the disk bounded",
      });
      sink.say(
        `warning: attempt ${this.attempt}: the ${log} log grows faster than it can be read; unread output was cut to keep it under worker.log_cap = ${this.capLabel}`,
      );
    }
    if (cap && cap.cuts > 0 && this.once(`capped:${log}`)) {
      await sink.event("log.capped", { attempt: this.attempt, log, cap: this.capLabel, method: cap.method, droppedBytes: cap.droppedBytes });
      sink.say(
        `attempt ${this.attempt}: the ${log} log passed worker.log_cap = ${this.capLabel}; its read middle is cut (${cap.method}), head and newest output kept`,
      );
    }
  }

  /** When the attempt ends: the totals of each log that had something cut. */
  async atEnd(sources: readonly LogMetricSource[], sink: LogNoticeSink): Promise<void> {
    for (const source of sources) {
      const { follower } = source;
      const stats = follower.lineStats;
      const cap = follower.cap;
      if (stats.longLines === 0 && !(cap && cap.cuts > 0)) continue;
      await sink.event("log.summary", {
        attempt: this.attempt,
        log: source.name,
        bytesRead: follower.bytesRead,
        longLines: stats.longLines,
        longestLine: stats.longestLine,
        droppedChars: stats.droppedChars,
        cappedBytes: cap?.droppedBytes ?? 0,
        unreadCutBytes: cap?.unreadBytes ?? 0,
        capMethod: cap?.method ?? null,
      });
    }
  }

  private once(key: string): boolean {
    if (this.said.has(key)) return false;
    this.said.add(key);
    return true;
  }
}
