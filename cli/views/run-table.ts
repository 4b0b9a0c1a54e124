import type { DispatchRow } from "../../hosts/index.ts";
import type { HostCheck } from "../../hosts/index.ts";

/**
 * Plain-text tables for the hosts commands. Pure: rows in, lines out; the CLI decides
 * whether to redraw them in place (a TTY) or print changes line by line.
 */
export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

/** A bar of `width` cells for a fraction in [0, 1], e.g. "[#####.....]  50%". */
export function progressBar(fraction: number, width = 16): string {
  const clamped = Math.min(1, Math.max(0, Number.isFinite(fraction) ? fraction : 0));
  const filled = Math.round(clamped * width);
  return `[${"#".repeat(filled)}${".".repeat(width - filled)}] ${String(Math.round(clamped * 100)).padStart(3)}%`;
}

/**
 * The same bar in unicode blocks for live terminal views, e.g. "█████░░░░░  52%". With a
 * width of 0 only the percentage is left (narrow terminals). The percentage is padded to
 * four characters so that bars in a column line up.
 */
export function blockBar(fraction: number, width = 10): string {
  const clamped = Math.min(1, Math.max(0, Number.isFinite(fraction) ? fraction : 0));
  const filled = Math.round(clamped * width);
  const percent = `${String(Math.round(clamped * 100)).padStart(3)}%`;
  return width > 0 ? `${"█".repeat(filled)}${"░".repeat(width - filled)} ${percent}` : percent;
}

/** How far a run is through its time budget; 1 when finished. */
export function runFraction(row: DispatchRow, now: Date): number {
  if (row.finished) return 1;
  if (row.startedAt === null || !(row.timeBudgetMs > 0)) return 0;
  return (now.getTime() - Date.parse(row.startedAt)) / row.timeBudgetMs;
}

function metricsText(metrics: Record<string, number> | null): string {
  if (!metrics) return "";
  return Object.entries(metrics)
    .slice(0, 2)
    .map(([name, value]) => `${name}=${Number.isInteger(value) ? value : value.toFixed(3)}`)
    .join(" ");
}

/** What a table says beside a row: the audit of its fetched result, else the dispatcher's note. */
export function rowNote(row: DispatchRow): string {
  if (row.auditErrors === null) return row.note;
  return row.auditErrors === 0 ? "fetched, audit clean" : `fetched, ${row.auditErrors} audit error(s)`;
}

export function renderDispatchTable(rows: DispatchRow[], now: Date = new Date()): string {
  return formatTable(
    ["BLUEPRINT", "HOST", "GPUS", "STATE", "PROGRESS", "STEP", "METRICS", "NOTE"],
    rows.map((row) => [
      row.blueprintId,
      row.host ?? "-",
      row.gpuIndices.length > 0 ? row.gpuIndices.join(",") : "-",
      row.state,
      row.host === null ? "" : progressBar(runFraction(row, now)),
      row.step === null ? "-" : String(row.step),
      metricsText(row.lastMetrics),
      rowNote(row).slice(0, 60),
    ]),
  );
}

/** One line per row whose state changed since `previous` (for logs and pipes). */
export function dispatchChanges(rows: DispatchRow[], previous: Map<string, string>): string[] {
  const lines: string[] = [];
  for (const row of rows) {
    const summary = `${row.state}${row.auditErrors !== null ? `/audit:${row.auditErrors}` : ""}`;
    if (previous.get(row.blueprintId) === summary) continue;
    previous.set(row.blueprintId, summary);
    const step = row.step === null ? "" : ` step ${row.step}`;
    lines.push(
      `${row.blueprintId}: ${row.state} on ${row.host ?? "-"}${row.gpuIndices.length > 0 ? ` (GPUs ${row.gpuIndices.join(",")})` : ""}${step}${row.note ? ` - ${row.note}` : ""}${row.auditErrors !== null ? ` - audit errors: ${row.auditErrors}` : ""}`,
    );
  }
  return lines;
}

export function renderHostChecks(checks: HostCheck[]): string {
  const table = formatTable(
    ["HOST", "KIND", "REACHABLE", "HOST KEY", "A3R", "GPUS", "FREE DISK"],
    checks.map((check) => [check.name, check.kind, check.reachable, check.hostKey, check.a3r, check.gpus, check.freeDisk]),
  );
  const problems = checks.flatMap((check) => check.problems.map((problem) => `  ${check.name}: ${problem}`));
  return problems.length > 0 ? `${table}\n\nproblems:\n${problems.join("\n")}` : table;
}
