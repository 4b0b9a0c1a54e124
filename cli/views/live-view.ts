import { isRunState, isTerminalRunState } from "../../campaign/index.ts";
import { createTerminalFrame, terminalColumns } from "../../core/terminal-frame.ts";
import { formatDuration } from "../../core/duration.ts";
import type { DispatchRow } from "../../hosts/index.ts";
import { blockBar, dispatchChanges, formatTable, rowNote } from "./run-table.ts";
import { formatNumber } from "../../leader/index.ts";
import { formatLlmProgress, subscribeLlmProgress, type LlmProgress } from "../../llm/index.ts";

/**
 * What a person sees while the leader watches a stage's experiments: on a terminal, a
 * table redrawn in place (one row per experiment: host, state, step of max steps, the
 * topic's metric, elapsed against the time budget, with bars); in a log or a pipe, one
 * plain line per change, the same lines `a3r dispatch` prints.
 *
 * The view remembers two things the rows do not carry: the last value of the metric seen
 * (a heartbeat's lastMetrics may lack it) and how long a run took (a finished row has no
 * end time; the elapsed time is frozen at the first update that sees it finished).
 *
 * Left out: reading files (the caller supplies max steps, e.g. from blueprint overrides
 * with `maxStepsFromOverrides`) and refreshing between updates (elapsed times move once
 * per dispatch round).
 */
export interface LiveViewOptions {
  stream: NodeJS.WritableStream;
  /** Whether `stream` is a terminal (redraw in place) or a log (plain lines). */
  tty: boolean;
  /** The topic's metric, shown as its own column; null shows the first metric a run reports. */
  metric: string | null;
  /** Terminal width; default the stream's columns, else 80. */
  columns?: number;
  /** Terminal height; default the stream's rows, else unlimited. */
  rows?: number;
  now?: () => number;
  /** A run's last step when known (e.g. max_steps of its blueprint's overrides). */
  maxSteps?: (row: DispatchRow) => number | null;
}

export interface LiveView {
  update(rows: DispatchRow[]): void;
  /** A line for the log, such as "leader: watch (stage 1)": above the table on a terminal. */
  note(line: string): void;
  /** Stops redrawing; the last table stays on the screen. */
  close(): void;
}

/** What the view remembers per experiment between updates. */
export interface LiveMemory {
  metric: Map<string, number>;
  /** Elapsed ms frozen when a run ended; null when it had already ended when first seen. */
  finalElapsed: Map<string, number | null>;
  seenRunning: Set<string>;
}

export function newLiveMemory(): LiveMemory {
  return { metric: new Map(), finalElapsed: new Map(), seenRunning: new Set() };
}

/** Plain lines are indented under the leader's "leader: watch" line, as `a3r research` printed them before. */
const plainIndent = "  ";

export function createLiveView(options: LiveViewOptions): LiveView {
  const now = options.now ?? Date.now;
  const memory = newLiveMemory();
  if (!options.tty) {
    const previous = new Map<string, string>();
    let closed = false;
    // A model call in flight: one line every 15 s of it, so a log shows a slow model working.
    let shownAt = 0;
    const stopProgress = subscribeLlmProgress((progress) => {
      if (closed || progress.done || progress.elapsedMs - shownAt < 15_000) {
        if (progress.done) shownAt = 0;
        return;
      }
      shownAt = progress.elapsedMs;
      options.stream.write(`${plainIndent}${formatLlmProgress(progress)}\n`);
    });
    return {
      update(rows) {
        if (closed) return;
        const lines = dispatchChanges(rows, previous);
        if (lines.length > 0) options.stream.write(lines.map((line) => `${plainIndent}${line}\n`).join(""));
      },
      note(line) {
        options.stream.write(`${line}\n`);
      },
      close() {
        closed = true;
        stopProgress();
      },
    };
  }
  const frame = createTerminalFrame({
    stream: options.stream,
    ...(options.columns !== undefined ? { columns: options.columns } : {}),
    ...(options.rows !== undefined ? { rows: options.rows } : {}),
  });
  // On a terminal the call's progress is the frame's one line while it runs (no table is
  // watched while the leader waits for its model); the next table replaces it.
  const stopProgress = subscribeLlmProgress((progress: LlmProgress) => frame.draw(progress.done ? "" : formatLlmProgress(progress)));
  return {
    update(rows) {
      frame.draw(
        renderLiveTable(rows, {
          metric: options.metric,
          now: now(),
          columns: terminalColumns(options.stream, options.columns),
          memory,
          ...(options.maxSteps ? { maxSteps: options.maxSteps } : {}),
        }),
      );
    },
    note(line) {
      frame.note(line);
    },
    close() {
      stopProgress();
      frame.close();
    },
  };
}

export interface LiveTableOptions {
  metric: string | null;
  now: number;
  columns: number;
  memory: LiveMemory;
  maxSteps?: (row: DispatchRow) => number | null;
}

/** Bar widths tried from widest down; the first table that fits the terminal wins. */
const barWidths = [10, 6, 0];

/**
 * The table and a summary line. Narrow terminals get narrower bars, then percentages
 * only; what still does not fit is cut by the frame at the right edge (the note first).
 */
export function renderLiveTable(rows: DispatchRow[], options: LiveTableOptions): string {
  const cells = rows.map((row) => liveCells(row, options));
  // The step bar and note columns only where some run has one.
  const stepBars = cells.some((cell) => cell.stepFraction !== null);
  const notes = cells.some((cell) => cell.note !== "");
  let table = "";
  for (const width of barWidths) {
    table = formatTable(
      ["EXPERIMENT", "HOST", "STATE", "STEP", options.metric ?? "METRIC", ...(stepBars ? ["STEPS"] : []), "TIME", ...(notes ? ["NOTE"] : [])],
      cells.map((cell) => [
        cell.id,
        cell.host,
        cell.state,
        cell.step,
        cell.metric,
        ...(stepBars ? [cell.stepFraction === null ? "" : blockBar(cell.stepFraction, width)] : []),
        timeText(cell, width),
        ...(notes ? [cell.note] : []),
      ]),
    );
    if (Math.max(...table.split("\n").map((line) => Array.from(line).length)) <= options.columns) break;
  }
  return `${table}\n${summaryLine(rows)}`;
}

interface LiveCells {
  id: string;
  host: string;
  state: string;
  step: string;
  stepFraction: number | null;
  metric: string;
  elapsedMs: number | null;
  budgetMs: number;
  note: string;
}

function liveCells(row: DispatchRow, options: LiveTableOptions): LiveCells {
  const { memory } = options;
  const id = row.blueprintId;
  const max = options.maxSteps?.(row) ?? null;
  const value = metricValue(row, options.metric);
  if (value !== null) memory.metric.set(id, value.number);
  const remembered = memory.metric.get(id);
  return {
    id,
    host: row.host ?? "-",
    state: row.state,
    step: max !== null ? `${row.step ?? "-"}/${max}` : row.step === null ? "-" : String(row.step),
    stepFraction: max !== null && max > 0 ? (row.step ?? 0) / max : null,
    metric: value !== null ? value.text : remembered !== undefined && options.metric !== null ? formatNumber(remembered) : "-",
    elapsedMs: elapsedOf(row, options.now, memory),
    budgetMs: row.timeBudgetMs,
    note: rowNote(row),
  };
}

function metricValue(row: DispatchRow, metric: string | null): { number: number; text: string } | null {
  const metrics = row.lastMetrics ?? {};
  if (metric !== null) {
    const value = metrics[metric];
    return typeof value === "number" && Number.isFinite(value) ? { number: value, text: formatNumber(value) } : null;
  }
  const first = Object.entries(metrics).find(([, value]) => typeof value === "number" && Number.isFinite(value));
  return first ? { number: first[1], text: `${first[0]}=${formatNumber(first[1])}` } : null;
}

/** A run that will not go on: finished, or given up by the dispatcher. */
function hasEnded(row: DispatchRow): boolean {
  return (
    row.finished ||
    row.state === "lost" ||
    row.state === "unschedulable" ||
    row.state === "launch_failed" ||
    (isRunState(row.state) && isTerminalRunState(row.state))
  );
}

function elapsedOf(row: DispatchRow, now: number, memory: LiveMemory): number | null {
  const id = row.blueprintId;
  const started = row.startedAt === null ? Number.NaN : Date.parse(row.startedAt);
  if (!hasEnded(row)) {
    memory.finalElapsed.delete(id); // a rerun (a new attempt) counts again
    if (!Number.isFinite(started)) return null;
    memory.seenRunning.add(id);
    return Math.max(0, now - started);
  }
  if (!memory.finalElapsed.has(id)) {
    memory.finalElapsed.set(id, memory.seenRunning.has(id) && Number.isFinite(started) ? Math.max(0, now - started) : null);
  }
  return memory.finalElapsed.get(id) ?? null;
}

function timeText(cell: LiveCells, barWidth: number): string {
  const budget = cell.budgetMs > 0 ? formatDuration(cell.budgetMs) : null;
  if (cell.elapsedMs === null) return budget === null ? "" : `-/${budget}`;
  const elapsed = formatElapsed(cell.elapsedMs);
  if (budget === null) return elapsed;
  return `${blockBar(cell.elapsedMs / cell.budgetMs, barWidth)} ${elapsed}/${budget}`;
}

/** "3m10s"; whole minutes past an hour ("1h5m"), where seconds no longer matter. */
export function formatElapsed(ms: number): string {
  if (!(ms >= 1000)) return "0s";
  const rounded = ms >= 3_600_000 ? Math.floor(ms / 60_000) * 60_000 : Math.floor(ms / 1000) * 1000;
  return formatDuration(rounded);
}

function summaryLine(rows: DispatchRow[]): string {
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(row.state, (counts.get(row.state) ?? 0) + 1);
  const parts = [...counts].map(([state, count]) => `${count} ${state}`);
  return `${rows.length} experiment${rows.length === 1 ? "" : "s"}${parts.length > 0 ? `: ${parts.join(", ")}` : ""}`;
}

/** The last step a blueprint's run goes to, from its overrides (`max_steps` or `total_steps`), when it says. */
export function maxStepsFromOverrides(overrides: Record<string, unknown> | undefined): number | null {
  for (const key of ["max_steps", "total_steps"]) {
    const value = overrides?.[key];
    if (typeof value === "number" && Number.isInteger(value) && value > 0) return value;
  }
  return null;
}
