import { setTimeout as sleep } from "node:timers/promises";
import { createTerminalFrame } from "../../core/terminal-frame.ts";

/**
 * `a3r status <campaign> --watch`: asks `render` for the campaign's text every interval
 * and shows it until the campaign is done or the signal aborts (Ctrl-C). On a terminal the
 * text is redrawn in place; in a log or a pipe a new copy is printed only when the text
 * changed, separated by a blank line, so that a log holds each distinct state once.
 *
 * Left out: catching render errors (they end the watch and reach the caller) and
 * redrawing identical text (a terminal already shows it; the frame would only flicker).
 */
export interface WatchStatusOptions {
  render: () => Promise<{ text: string; done: boolean }>;
  stream: NodeJS.WritableStream;
  /** Whether `stream` is a terminal (redraw in place) or a log (print changes). */
  tty: boolean;
  intervalMs: number;
  signal?: AbortSignal;
  /** Terminal size; default the stream's columns and rows. */
  columns?: number;
  rows?: number;
}

/** The last text shown, and whether the campaign was done (false: the signal aborted the watch). */
export interface WatchStatusResult {
  text: string;
  done: boolean;
}

export async function watchStatus(options: WatchStatusOptions): Promise<WatchStatusResult> {
  const frame = options.tty
    ? createTerminalFrame({
        stream: options.stream,
        ...(options.columns !== undefined ? { columns: options.columns } : {}),
        ...(options.rows !== undefined ? { rows: options.rows } : {}),
      })
    : null;
  let shown: string | null = null;
  let shownColumns: unknown;
  const size = options.stream as { columns?: unknown };
  try {
    for (;;) {
      const { text, done } = await options.render();
      if (frame) {
        // A resized terminal needs a redraw even for the same text (lines are cut to its width).
        if (text !== shown || size.columns !== shownColumns) frame.draw(text);
        shownColumns = size.columns;
      } else if (text !== shown) {
        options.stream.write(`${shown === null ? "" : "\n"}${text}\n`);
      }
      shown = text;
      if (done || options.signal?.aborted) return { text, done };
      try {
        await sleep(options.intervalMs, undefined, options.signal ? { signal: options.signal } : {});
      } catch (error) {
        if (options.signal?.aborted) return { text, done: false };
        throw error;
      }
    }
  } finally {
    frame?.close();
  }
}
