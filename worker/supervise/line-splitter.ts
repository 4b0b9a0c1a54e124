import { StringDecoder } from "node:string_decoder";

/**
 * Splits a byte stream into lines with bounded memory, whatever the lines' length: `\n`,
 * `\r\n` and a lone `\r` each end a line (a progress bar rewrites its line with `\r`, so a
 * metric printed after it starts a new one), empty lines are skipped, and a line longer than
 * `maxLineChars` is cut: its first and last halves are kept (a metric printed at the end of a
 * 10 MB line without a newline is still read), the middle is dropped and counted. A cut line
 * never swallows the lines after it. UTF-8 split across chunks is decoded whole; invalid
 * bytes become U+FFFD.
 */
export interface SplitStats {
  /** Lines longer than the cap (cut). */
  longLines: number;
  /** The longest line seen, in characters (before its cut). */
  longestLine: number;
  /** Characters dropped from the middles of long lines. */
  droppedChars: number;
}

export type LineSink = (line: string, cutChars: number) => void;

export class LineSplitter {
  private decoder = new StringDecoder("utf8");
  private readonly keepHead: number;
  private readonly keepTail: number;
  /** The current line while it fits the cap. */
  private line = "";
  /** Once cut: its first part, the rolling last part, and what was dropped between them. */
  private cut: { head: string; tail: string; dropped: number } | null = null;
  /** The last chunk ended with `\r`: a `\n` starting the next one belongs to it. */
  private afterCr = false;
  readonly stats: SplitStats = { longLines: 0, longestLine: 0, droppedChars: 0 };

  constructor(readonly maxLineChars = 64 * 1024) {
    this.keepHead = Math.floor(maxLineChars / 2);
    this.keepTail = maxLineChars - this.keepHead;
  }

  /** Feeds bytes; calls `sink` for each complete non-empty line. */
  push(bytes: Buffer, sink: LineSink): void {
    this.feed(this.decoder.write(bytes), sink);
  }

  /** Forgets the current line (the file was replaced); the counts stay. */
  reset(): void {
    this.decoder = new StringDecoder("utf8");
    this.line = "";
    this.cut = null;
    this.afterCr = false;
  }

  /** The stream ended: the unterminated last line, if any, is a line too. */
  end(sink: LineSink): void {
    this.feed(this.decoder.end(), sink);
    this.emit(sink);
  }

  private feed(text: string, sink: LineSink): void {
    const length = text.length;
    let index = 0;
    if (this.afterCr && length > 0 && text.charCodeAt(0) === 10) index = 1;
    this.afterCr = false;
    // Both next positions are remembered, so each search runs once over the text (linear).
    let nextLf = text.indexOf("\n", index);
    let nextCr = text.indexOf("\r", index);
    while (index < length) {
      if (nextLf !== -1 && nextLf < index) nextLf = text.indexOf("\n", index);
      if (nextCr !== -1 && nextCr < index) nextCr = text.indexOf("\r", index);
      const end = nextLf === -1 ? nextCr : nextCr === -1 ? nextLf : Math.min(nextLf, nextCr);
      if (end === -1) {
        this.append(text, index, length);
        return;
      }
      this.append(text, index, end);
      this.emit(sink);
      if (text.charCodeAt(end) === 13) {
        if (end + 1 === length) this.afterCr = true;
        index = end + 1 < length && text.charCodeAt(end + 1) === 10 ? end + 2 : end + 1;
      } else {
        index = end + 1;
      }
    }
  }

  private append(text: string, from: number, to: number): void {
    if (to <= from) return;
    if (this.cut === null) {
      if (this.line.length + (to - from) <= this.maxLineChars) {
        this.line += text.slice(from, to);
        return;
      }
      const whole = this.line + text.slice(from, to);
      this.line = "";
      // Flattened copies: a slice would keep the whole chunk alive.
      this.cut = {
        head: copyOf(whole.slice(0, this.keepHead)),
        tail: copyOf(whole.slice(whole.length - this.keepTail)),
        dropped: whole.length - this.keepHead - this.keepTail,
      };
      return;
    }
    const cut = this.cut;
    const piece = to - from;
    if (piece >= this.keepTail) {
      cut.dropped += cut.tail.length + piece - this.keepTail;
      cut.tail = copyOf(text.slice(to - this.keepTail, to));
    } else {
      const joined = cut.tail + text.slice(from, to);
      cut.dropped += joined.length - this.keepTail;
      cut.tail = copyOf(joined.slice(joined.length - this.keepTail));
    }
  }

  private emit(sink: LineSink): void {
    if (this.cut !== null) {
      const { head, tail, dropped } = this.cut;
      this.cut = null;
      this.stats.longLines += 1;
      this.stats.droppedChars += dropped;
      this.stats.longestLine = Math.max(this.stats.longestLine, head.length + tail.length + dropped);
      sink(`${head} … ${tail}`, dropped);
      return;
    }
    const line = this.line;
    if (line.length === 0) return;
    this.line = "";
    if (line.length > this.stats.longestLine) this.stats.longestLine = line.length;
    sink(line, 0);
  }
}

/** A string that does not share memory with the one it came from. */
function copyOf(text: string): string {
  return Buffer.from(text, "utf8").toString("utf8");
}
