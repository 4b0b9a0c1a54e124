import { z } from "zod";
import { redactValue } from "../core/redact.ts";
import type { RecordProblem } from "./finding.ts";
import { appendJsonLine, describeIssues, readJsonLines, safeLineBytes } from "./jsonl-file.ts";

/**
 * The append-only event log of a campaign or of one run: what happened and the evidence
 * it rests on (paths, numbers, ids), one JSON object per line:
 * `{"time":"2026-11-29T10:00:00.000Z","kind":"blueprint.skipped","blueprintId":"s1-a","reason":"..."}`.
 *
 * Kinds are dotted names chosen by the writer (`campaign.created`, `run.launched`,
 * `failure.classified`, `blueprint.skipped` ...). Left out on purpose: a closed list of
 * kinds (readers match the kinds they know and ignore the rest), ordering across
 * processes beyond "lines do not interleave", and rotation (a campaign's log stays small).
 */
export const eventSchema = z.looseObject({
  time: z.iso.datetime({ offset: true }),
  kind: z
    .string()
    .min(1)
    .regex(/^[a-z0-9_.-]+$/, "a lowercase dotted name such as run.launched"),
});

export type CampaignEvent = z.infer<typeof eventSchema> & Record<string, unknown>;

/** Evidence: any JSON-serializable facts except the reserved `time` and `kind`. */
export type EventEvidence = Record<string, unknown> & { time?: never; kind?: never };

export interface EventRead {
  events: CampaignEvent[];
  /** Line numbers of the events, parallel to `events`. */
  lines: number[];
  problems: RecordProblem[];
}

export function makeEvent(kind: string, evidence: EventEvidence = {}, now: Date = new Date()): CampaignEvent {
  // Evidence cannot overwrite the two fields every reader relies on.
  const { time: _time, kind: _kind, ...facts } = evidence as Record<string, unknown>;
  const event = { time: now.toISOString(), kind, ...facts };
  const checked = eventSchema.safeParse(event);
  if (!checked.success) throw new TypeError(`event "${kind}" is invalid: ${describeIssues(checked.error.issues)}`);
  return event as CampaignEvent;
}

/**
 * Appends one event, every string of its evidence redacted (core/redact.ts): events quote
 * logs, commands and failure reasons, and a campaign's and a run's events.jsonl are both
 * written here. Lines over 4 KiB are written but lose the no-interleave guarantee.
 */
export async function appendEvent(path: string, kind: string, evidence: EventEvidence = {}, now?: Date): Promise<CampaignEvent> {
  return (await appendEventLine(path, kind, evidence, now)).event;
}

/** appendEvent, also giving the exact bytes written (the result-dir writer tells its own lines from foreign ones by them). */
export async function appendEventLine(path: string, kind: string, evidence: EventEvidence = {}, now?: Date): Promise<{ event: CampaignEvent; bytes: Buffer }> {
  const event = makeEvent(kind, redactValue(evidence), now);
  return { event, bytes: await appendJsonLine(path, event) };
}

/**
 * Appends the event unless one of the same kind whose fields equal every field of `key`
 * is already in the log, and returns whether it wrote. For writers that may run twice
 * (a leader node re-run after a crash): the decision is logged once. Not atomic across
 * processes; one leader writes a campaign's log at a time.
 */
export async function appendEventOnce(path: string, kind: string, key: Record<string, unknown>, evidence: EventEvidence = {}): Promise<boolean> {
  const { events } = await readEvents(path);
  // The log holds the key as written: redacted.
  const written = redactValue(key);
  const seen = events.some(
    (event) => event.kind === kind && Object.entries(written).every(([field, value]) => JSON.stringify(event[field]) === JSON.stringify(value)),
  );
  if (seen) return false;
  await appendEvent(path, kind, { ...key, ...evidence } as EventEvidence);
  return true;
}

/** Reads every event it can; torn and corrupt lines become problems, never exceptions. */
export async function readEvents(path: string): Promise<EventRead> {
  const content = await readJsonLines(path);
  const events: CampaignEvent[] = [];
  const lines: number[] = [];
  const problems = [...content.problems];
  for (const { line, value } of content.lines) {
    const checked = eventSchema.safeParse(value);
    if (checked.success) {
      events.push(checked.data as CampaignEvent);
      lines.push(line);
    } else {
      problems.push({
        file: path,
        line,
        code: "EVENT_INVALID",
        message: `event does not match {time, kind, ...evidence}: ${describeIssues(checked.error.issues)}`,
      });
    }
  }
  problems.sort((a, b) => a.line - b.line);
  return { events, lines, problems };
}

/** An append-only log bound to one file, for callers that write many events. */
export class EventLog {
  constructor(readonly path: string) {}

  append(kind: string, evidence: EventEvidence = {}): Promise<CampaignEvent> {
    return appendEvent(this.path, kind, evidence);
  }

  read(): Promise<EventRead> {
    return readEvents(this.path);
  }
}

export { safeLineBytes };
