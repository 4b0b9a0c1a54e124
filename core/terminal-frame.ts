/**
 * A block of text redrawn in place at the bottom of a terminal: the live tables of
 * `a3r research` / `a3r status --watch` (and any other live view) draw through it.
 *
 * How: every frame ends with a newline, so the cursor rests at the start of the line below
 * it. A redraw moves the cursor up over the previous frame (CSI n A), clears to the end
 * of the screen (CSI J) and writes the new frame, all in one write so that a terminal
 * never shows half a frame. A note (a line that should stay in the scrollback, such as
 * "leader: watch (stage 1)") is written where the frame was, and the frame is drawn again
 * below it.
 *
 * Why lines are truncated and the frame is capped in height: the cursor can only move up
 * over rows it knows about. A line wider than the terminal wraps into two rows and a frame
 * taller than the screen scrolls its top out of reach; either way the next redraw would
 * leave a stale copy behind and the table would march down the screen.
 *
 * Left out: the width of wide (east Asian) and combining characters (one code point is
 * counted as one column), and writes to the same stream that bypass the frame (they are
 * overwritten or leave debris: send them through `note`).
 */
export interface TerminalFrameOptions {
  stream: NodeJS.WritableStream;
  /** Terminal width; default the stream's `columns` (read at every draw), else 80. */
  columns?: number;
  /** Terminal height; default the stream's `rows`, else unlimited. */
  rows?: number;
}

export interface TerminalFrame {
  /** Replaces the frame with `text` (several lines). */
  draw(text: string): void;
  /** Writes `text` above the frame, where it scrolls like ordinary output. */
  note(text: string): void;
  /** Leaves the last frame on the screen; later draws are ignored, later notes are plain lines. */
  close(): void;
}

export const defaultColumns = 80;

/** Cursor up `height` rows to the start of the line, then clear to the end of the screen. */
export function eraseUp(height: number): string {
  return height > 0 ? `\x1b[${height}A\r\x1b[J` : "";
}

const csiSequence = /\x1b\[[0-9;?]*[ -/]*[@-~]/g;
const controlCharacter = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** One printable line: escape sequences and control characters (a \r, a stray ESC) removed, tabs as spaces. */
export function printableLine(line: string): string {
  return line.replace(csiSequence, "").replace(/\t/g, "  ").replace(controlCharacter, "");
}

/** Cuts `line` to `columns` code points, marking the cut with "…". */
export function fitToWidth(line: string, columns: number): string {
  if (columns <= 0) return "";
  const points = Array.from(line);
  return points.length <= columns ? line : `${points.slice(0, columns - 1).join("")}…`;
}

/** Keeps a frame within `maxLines`, saying how many lines were left out. */
export function capHeight(lines: string[], maxLines: number): string[] {
  if (lines.length <= maxLines) return lines;
  const kept = Math.max(0, maxLines - 1);
  const hidden = lines.length - kept;
  return [...lines.slice(0, kept), `… ${hidden} more line${hidden === 1 ? "" : "s"} (a taller terminal shows them)`];
}

/** Rows a line of `length` code points occupies on a terminal `columns` wide (it may have been narrowed since). */
function rowsOf(length: number, columns: number): number {
  return Math.max(1, Math.ceil(length / Math.max(1, columns)));
}

/** The width to draw for: the given one, else the stream's (a pty may report 0: unknown), else 80. */
export function terminalColumns(stream: NodeJS.WritableStream, columns?: number): number {
  const reported = (stream as { columns?: unknown }).columns;
  return columns ?? (typeof reported === "number" && reported > 0 ? reported : defaultColumns);
}

export function createTerminalFrame(options: TerminalFrameOptions): TerminalFrame {
  const { stream } = options;
  const size = stream as { rows?: unknown };
  const columns = (): number => terminalColumns(stream, options.columns);
  const maxLines = (): number => {
    const rows = options.rows ?? (typeof size.rows === "number" && size.rows > 0 ? size.rows : Number.POSITIVE_INFINITY);
    // One row stays free for the cursor, else the frame's last newline scrolls its top away.
    return Math.max(1, rows - 1);
  };
  let text: string | null = null;
  let drawn: string[] = [];
  let closed = false;

  const erase = (): string => eraseUp(drawn.reduce((total, line) => total + rowsOf(Array.from(line).length, columns()), 0));
  const layout = (): string[] => {
    if (text === null) return [];
    const width = columns();
    return capHeight(
      text.split("\n").map((line) => fitToWidth(printableLine(line), width)),
      maxLines(),
    );
  };
  const lines = (items: string[]): string => items.map((line) => `${line}\n`).join("");

  return {
    draw(next) {
      if (closed) return;
      const before = erase();
      text = next;
      drawn = layout();
      stream.write(`${before}${lines(drawn)}`);
    },
    note(message) {
      const noteLines = lines(message.split("\n").map(printableLine));
      if (closed || text === null) {
        stream.write(noteLines);
        return;
      }
      const before = erase();
      drawn = layout();
      stream.write(`${before}${noteLines}${lines(drawn)}`);
    },
    close() {
      closed = true;
    },
  };
}
