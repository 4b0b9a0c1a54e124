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

/** Resolves to the exact bytes appended (the result-dir writer tells its own entries from foreign ones by them). */
export async function appendAttempt(path: string, entry: AttemptEntry): Promise<Buffer> {
  await mkdir(dirname(path), { recursive: true });
  const bytes = Buffer.from(formatAttemptEntry(entry), "utf8");
  await appendFile(path, bytes, { flag: "a" });
  return bytes;
}
