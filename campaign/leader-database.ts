import { open } from "node:fs/promises";
import Database from "better-sqlite3";
import { readEvents } from "./event-log.ts";

/**
 * The leader's LangGraph checkpoint (runs/<id>/leader.sqlite) can be damaged by a full
 * disk, a copy cut short or a hand edit; SQLite then says only "file is not a database".
 * This says what is wrong in words, before anything opens it for writing. Cost: the header
 * read plus SQLite's own `quick_check` (linear in the file's size).
 */
export async function leaderDatabaseProblem(path: string, eventsPath?: string): Promise<string | null> {
  let header: Buffer;
  try {
    const file = await open(path, "r");
    try {
      const { buffer, bytesRead } = await file.read(Buffer.alloc(16), 0, 16, 0);
      header = buffer.subarray(0, bytesRead);
    } finally {
      await file.close();
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    return `cannot be read: ${(error as Error).message}`;
  }
  // A new campaign's file may exist and still be empty (SQLite writes on first use). Once
  // the leader has run, the saver's tables are in it, so an empty file beside a log of the
  // leader's decisions was truncated: taking it as a fresh campaign would plan again.
  if (header.length === 0) return eventsPath === undefined ? null : await emptyDespiteProgress(eventsPath);
  if (header.toString("latin1") !== "SQLite format 3\0") return "is not a SQLite database (its first bytes are not SQLite's header)";
  let database: Database.Database | undefined;
  try {
    database = new Database(path, { readonly: true, fileMustExist: true });
    const rows = database.pragma("quick_check") as { quick_check: string }[];
    const verdict = rows.map((row) => row.quick_check).join("; ");
    return verdict === "ok" ? null : `is damaged (SQLite's quick_check: ${verdict.slice(0, 300)})`;
  } catch (error) {
    return `is damaged (${(error as Error).message})`;
  } finally {
    database?.close();
  }
}

async function emptyDespiteProgress(eventsPath: string): Promise<string | null> {
  const { events } = await readEvents(eventsPath);
  const decisions = events.filter((event) => event.kind !== "campaign.created").length;
  return decisions === 0 ? null : `is empty (0 bytes) although events.jsonl records ${decisions} of the leader's events: the checkpoint was lost`;
}
