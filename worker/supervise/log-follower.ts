import { open, stat, type FileHandle } from "node:fs/promises";
import { LineSplitter, type LineSink, type SplitStats } from "./line-splitter.ts";
import { compactPunchedLog, cutLogMiddle, newLogCapState, planCut, type LogCapState } from "./log-cap.ts";

/** How much one poll may read before it yields (the rest is read by the next poll, at once). */
export interface ReadBudget {
  maxBytes: number;
  maxMs: number;
}

/** A poll's share: a flood is read in slices, so the other checks still run in between. */
export const pollBudget: ReadBudget = { maxBytes: 32 << 20, maxMs: 250 };
/** After the process ended: everything there is (nobody writes any more), within a generous deadline. */
export const drainBudget: ReadBudget = { maxBytes: Number.POSITIVE_INFINITY, maxMs: 120_000 };

const chunkBytes = 1 << 20;
/** A tail line longer than this is shortened for the classifier's evidence (its start and its end). */
const tailLineChars = 2000;

export interface LogFollowerOptions {
  offset?: number;
  /** The classifier's tail: at most this many lines... */
  tailLines?: number;
  /** ...of at most the last this many bytes. */
  tailBytes?: number;
  /** A longer line is cut (its start and end kept), LineSplitter. */
  maxLineChars?: number;
  /** Keep the file under this many bytes by cutting its middle once read (log-cap.ts); none: never. */
  capBytes?: number;
  /** The cap as the blueprint said it (for the marker line). */
  capLabel?: string;
}

/**
 * Follows a growing log file by polling its size, like `tail -F` without the process: each
 * poll reads to the end of the file within a budget (the rest on the next poll: `behind`),
 * gives complete lines only (a partial last line waits for its line end, or for `finish`),
 * with bounded memory whatever the output (LineSplitter), keeps a bounded tail of raw bytes
 * for the failure classifier, caps the file it has read when asked (log-cap.ts), and starts
 * from a saved offset after a worker restart so lines are neither lost nor read twice.
 */
export class LogFollower {
  private offset: number;
  private readonly splitter: LineSplitter;
  private tail = Buffer.alloc(0);
  private readonly tailLimit: number;
  private readonly tailBytes: number;
  private readCount = 0;
  private lagging = false;
  private readonly capBytes: number | undefined;
  private readonly capLabel: string;
  /** The cap's record (what was cut, how); undefined when the file is not capped. */
  cap: LogCapState | undefined;

  constructor(
    private readonly path: string,
    options: LogFollowerOptions = {},
  ) {
    this.offset = options.offset ?? 0;
    this.tailLimit = options.tailLines ?? 1000;
    this.tailBytes = options.tailBytes ?? 256 * 1024;
    this.splitter = new LineSplitter(options.maxLineChars);
    this.capBytes = options.capBytes;
    this.capLabel = options.capLabel ?? `${options.capBytes} bytes`;
  }

  /** Where the next read starts in the file (it moves down when the cap cuts the file). */
  get position(): number {
    return this.offset;
  }

  /** Every byte this follower has read, cut or not. */
  get bytesRead(): number {
    return this.readCount;
  }

  /** The last read stopped at its budget with the file longer: the rest is still to read. */
  get behind(): boolean {
    return this.lagging;
  }

  /** The long lines seen and cut. */
  get lineStats(): SplitStats {
    return this.splitter.stats;
  }

  /** The last lines seen (at most `tailLines`, of the last `tailBytes`), newest last; a very long one shows its start and end. */
  recentText(): string {
    const lines = this.tail
      .toString("utf8")
      .split(/\r\n|\r|\n/)
      .filter((line) => line.length > 0);
    return lines
      .slice(-this.tailLimit)
      .map((line) => (line.length > tailLineChars ? `${line.slice(0, tailLineChars / 4)} … ${line.slice(line.length - (tailLineChars * 3) / 4)}` : line))
      .join("\n");
  }

  /** Reads what was appended since the last call; returns the new complete lines. */
  async poll(budget: ReadBudget = pollBudget): Promise<string[]> {
    const lines: string[] = [];
    await this.read((line) => lines.push(line), budget);
    return lines;
  }

  /**
   * Reads from where it stopped to the end of the file (or the budget), giving each complete
   * line to `sink`, then cuts the file's read middle when it passed the cap. Returns the bytes read.
   */
  async read(sink: LineSink, budget: ReadBudget = pollBudget): Promise<number> {
    let handle: FileHandle;
    try {
      handle = await open(this.path, "r");
    } catch {
      this.lagging = false;
      return 0;
    }
    try {
      const stats = await handle.stat();
      if (stats.size < this.offset) {
        // Truncated or replaced: start over rather than miss what is there now.
        this.offset = 0;
        this.splitter.reset();
      }
      const { read, size } = await this.readChunks(handle, stats.size, sink, budget);
      this.lagging = this.offset < size;
      if (this.capBytes !== undefined) await this.capFile(size, stats.blksize || 4096);
      return read;
    } finally {
      await handle.close();
    }
  }

  /** The process ended: the unterminated last line, if any, is a line too. */
  finish(sink: LineSink): void {
    this.splitter.end(sink);
  }

  /** The attempt ended (nobody writes the file any more): a punched (sparse) log is written again without its hole. */
  async compact(): Promise<void> {
    const cap = this.cap;
    if (cap?.method !== "punch") return;
    const hole = cap.holeEnd - cap.headBytes;
    // The hole was read before it was punched: what follows it moves down by its length.
    if (
      await compactPunchedLog(this.path, cap).then(
        () => true,
        () => false,
      )
    )
      this.offset = Math.max(0, this.offset - hole);
  }

  private async readChunks(handle: FileHandle, knownSize: number, sink: LineSink, budget: ReadBudget): Promise<{ read: number; size: number }> {
    const started = Date.now();
    let size = knownSize;
    let read = 0;
    for (;;) {
      if (this.offset >= size) {
        size = (await handle.stat()).size;
        if (this.offset >= size) break;
      }
      if (read >= budget.maxBytes || Date.now() - started >= budget.maxMs) break;
      const length = Math.min(size - this.offset, chunkBytes);
      const buffer = Buffer.allocUnsafe(length);
      const { bytesRead } = await handle.read(buffer, 0, length, this.offset);
      if (bytesRead === 0) break;
      const bytes = buffer.subarray(0, bytesRead);
      this.offset += bytesRead;
      this.readCount += bytesRead;
      read += bytesRead;
      this.keepTail(bytes);
      this.splitter.push(bytes, sink);
    }
    return { read, size };
  }

  private keepTail(bytes: Buffer): void {
    if (bytes.length >= this.tailBytes) {
      this.tail = Buffer.from(bytes.subarray(bytes.length - this.tailBytes));
      return;
    }
    const drop = Math.max(0, this.tail.length + bytes.length - this.tailBytes);
    this.tail = Buffer.concat([this.tail.subarray(drop), bytes]);
  }

  private async capFile(size: number, blockBytes: number): Promise<void> {
    const capBytes = this.capBytes!;
    this.cap ??= newLogCapState(capBytes, blockBytes);
    if (this.cap.method === "none") return;
    const cut = planCut(this.cap, capBytes, size, this.offset, blockBytes);
    if (!cut) return;
    const moved = await cutLogMiddle(this.path, this.cap, cut, this.capLabel);
    // cutLogMiddle records the method that worked: none means nothing was cut.
    if ((this.cap.method as LogCapState["method"]) === "none") return;
    if (this.offset >= cut.to) {
      this.offset -= moved;
      return;
    }
    // Unread output was cut (the writer outran the reader): read on from the newest output kept.
    this.cap.unreadBytes += cut.to - this.offset;
    this.offset = this.cap.method === "collapse" ? cut.from : cut.to;
    this.splitter.reset();
  }
}

/** The classifier's tail of a log file, read from its end: bounded whatever the file's size (a launch that failed). */
export async function readLogTail(path: string, tailBytes = 256 * 1024): Promise<string> {
  const size = await stat(path).then(
    (found) => found.size,
    () => 0,
  );
  const follower = new LogFollower(path, { offset: Math.max(0, size - tailBytes), tailBytes });
  await follower.read(() => {}, drainBudget);
  return follower.recentText();
}
