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
  }

  /** The stream ended: the unterminated last line, if any, is a line too. */
  end(sink: LineSink): void {
    this.feed(this.decoder.end(), sink);
    this.emit(sink);
  }

  private feed(text: string, sink: LineSink): void {
    // One pass over the characters: `\r\n` is two line ends with an empty line between, and
    // empty lines are never given, so runs of line ends (a `\r`-only flood) cost nothing more.
    const length = text.length;
    let start = 0;
    for (let index = 0; index < length; index += 1) {
      const code = text.charCodeAt(index);
      if (code !== 10 && code !== 13) continue;
      if (index > start) this.append(text, start, index);
      this.emit(sink);
      start = index + 1;
    }
    if (start < length) this.append(text, start, length);
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
