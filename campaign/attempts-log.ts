import { printable } from "../core/printable-text.ts";
import { redactSecrets } from "../core/redact.ts";
import { appendFile, mkdir } from "node:fs/promises";
import { dirname } from "node:path";

/**
 * attempts.md: the trial-and-error log a person reads, one section per attempt or fix.
 * Append-only markdown; machines read events.jsonl instead. Left out: structure beyond
 * the heading (the body is free text the worker or the model wrote).
 */
export interface AttemptEntry {
  attempt: number;
  title: string;
  body: string;
  time?: Date;
}

export function formatAttemptEntry(entry: AttemptEntry): string {
  const time = (entry.time ?? new Date()).toISOString();
  const title = entry.title.replace(/\s+/g, " ").trim();
  // Bodies quote logs (text a run's program, or an attacker, wrote): no terminal escapes, no secrets.
  return printable(redactSecrets(`## Attempt ${entry.attempt}: ${title}\n\n_${time}_\n\n${entry.body.trimEnd()}\n\n`));
}

export async function appendAttempt(path: string, entry: AttemptEntry): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await appendFile(path, formatAttemptEntry(entry), { flag: "a" });
}
