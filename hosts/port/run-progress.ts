import { z } from "zod";
import { isRunState, isTerminalRunState, metricsRecordSchema, parseRunStatus, type MetricsRecord } from "../../campaign/index.ts";
import type { RunProgress, RunRef } from "./launcher.ts";
import { printable } from "../../core/printable-text.ts";
import { parsePythonJson } from "../../core/python-json.ts";

/**
 * launch.json: the marker a launcher writes on the host, beside (not inside) the result
 * directory, before it starts anything. Its existence is the idempotency of `launch`; its
 * pgid lets a later process poll and cancel the run.
 */
export const launchMarkerSchema = z.object({
  campaign: z.string(),
  blueprintId: z.string(),
  host: z.string(),
  resultDir: z.string(),
  gpuIndices: z.array(z.number().int().nonnegative()),
  pgid: z.number().int().positive().nullable(),
  launchedAt: z.iso.datetime({ offset: true }),
});

export type LaunchMarker = z.infer<typeof launchMarkerSchema>;

export function parseLaunchMarker(text: string | undefined): LaunchMarker | undefined {
  if (!text || text.trim() === "") return undefined;
  try {
    const checked = launchMarkerSchema.safeParse(JSON.parse(text));
    return checked.success ? checked.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The shell command that prints every launch.json under a host's workdir, one per line:
 * what `list` reads on a remote host (ssh, a Slurm login node). A folder set aside (a3r
 * stop, then resume) keeps its old launch.json: that run is not one the host has now.
 */
export function listMarkersScript(quotedWorkdir: string): string {
  return `for f in ${quotedWorkdir}/*/*/launch.json; do case "$f" in *.set-aside-*) continue;; esac; [ -f "$f" ] && { cat "$f"; echo; }; done; true`;
}

/** The runs named by the launch markers `listMarkersScript` printed. */
export function refsOfMarkerListing(stdout: string): RunRef[] {
  const refs: RunRef[] = [];
  for (const line of stdout.split("\n")) {
    const marker = parseLaunchMarker(line);
    if (marker) refs.push({ campaign: marker.campaign, blueprintId: marker.blueprintId });
  }
  return refs;
}

/** What a launcher read on the host, as text, before any interpretation. */
export interface RawRunFiles {
  launch?: string | undefined;
  status?: string | undefined;
  finish?: string | undefined;
  metricsTail?: string | undefined;
  /** Whether the run's process group is alive; undefined when the host cannot tell. */
  alive?: boolean | undefined;
  /** The end of the worker's own log (read when its group is gone): why a launch died at once. */
  workerLog?: string | undefined;
}

/** A run without a status this long after launch, and no process, is lost. */
export const launchGraceMs = 15_000;

export function parseMetricsTail(text: string | undefined, keep = 5): MetricsRecord[] {
  if (!text) return [];
  const records: MetricsRecord[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const checked = metricsRecordSchema.safeParse(parsePythonJson(line));
      if (checked.success) records.push(checked.data);
    } catch {
      // A torn last line while the worker is appending: skip it, the next poll has it.
    }
  }
  return records.slice(-keep);
}

/**
 * Why a run is lost, in the worker's own words: the last lines of its log, made printable
 * (a launch that died at once, such as `sh: 1: exec: a3r: not found`, says so there).
 */
function lastWords(log: string | undefined): string {
  const lines = (log ?? "")
    .split("\n")
    .map((line) => printable(line).trim())
    .filter((line) => line !== "");
  if (lines.length === 0) return "no worker is running it, and its worker left no output";
  return `no worker is running it; the worker's last output: ${lines.slice(-2).join(" | ").slice(0, 400)}`;
}

/** Turns what was read on a host into the progress the port reports. Pure. */
export function describeProgress(ref: RunRef, host: string, raw: RawRunFiles, now: Date = new Date()): RunProgress {
  const marker = parseLaunchMarker(raw.launch);
  const base: RunProgress = {
    ref,
    host,
    state: "unknown",
    finished: false,
    step: null,
    lastMetrics: null,
    heartbeatAt: null,
    startedAt: null,
    reason: null,
    gpuIndices: marker?.gpuIndices ?? [],
    metricsTail: parseMetricsTail(raw.metricsTail),
  };
  if (raw.launch === undefined && raw.status === undefined && raw.finish === undefined) return base;
  const status = raw.status ? parseRunStatus(raw.status, "status.json").status : undefined;
  const finishText = raw.finish?.trim();
  const finalState = finishText && isRunState(finishText) && isTerminalRunState(finishText) ? finishText : undefined;
  const progress: RunProgress = {
    ...base,
    state: finalState ?? status?.state ?? "launching",
    finished: finalState !== undefined,
    step: status?.step ?? base.metricsTail.at(-1)?.step ?? null,
    lastMetrics: status?.lastMetrics ?? null,
    heartbeatAt: status?.heartbeatAt ?? null,
    startedAt: status?.startedAt ?? null,
    reason: status?.reason ?? null,
  };
  if (!progress.finished && raw.alive === false) {
    const launchedAt = marker ? Date.parse(marker.launchedAt) : Number.NaN;
    const young = Number.isFinite(launchedAt) && now.getTime() - launchedAt < launchGraceMs && status === undefined;
    if (!young) {
      progress.state = "lost";
      if (progress.reason === null) progress.reason = lastWords(raw.workerLog);
    }
  }
  return progress;
}
