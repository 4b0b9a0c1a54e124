import { mkdir, open, readFile, type FileHandle } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import type { RecordProblem } from "./finding.ts";

/**
 * Append-only JSON Lines files (events, metrics, ledger). One JSON value per line.
 *
 * Appends within this process are serialized per file (a promise chain), and each line
 * goes out in one write on a descriptor opened with O_APPEND, so lines from concurrent
 * processes do not interleave on a local filesystem as long as a line stays under about
 * 4 KiB. Left out: fsync per line (a crash may lose the last lines, never earlier ones),
 * locking across processes, and network filesystems, where O_APPEND is not atomic.
 */
const writeChains = new Map<string, Promise<Buffer>>();

export const safeLineBytes = 4096;

/** Resolves to the bytes this append wrote (a leading newline included when it closed a torn line). */
export function appendJsonLine(path: string, value: unknown, serialize: (value: unknown) => string = JSON.stringify): Promise<Buffer> {
  const line = `${serialize(value)}\n`;
  const key = resolve(path);
  const previous: Promise<unknown> = writeChains.get(key) ?? Promise.resolve();
  const next = previous.catch(() => undefined).then(() => appendLine(key, line));
  writeChains.set(key, next);
  // Drop the chain once idle so long-lived processes do not keep one entry per file forever.
  void next
    .finally(() => {
      if (writeChains.get(key) === next) writeChains.delete(key);
    })
    .catch(() => undefined);
  return next;
}

async function appendLine(path: string, line: string): Promise<Buffer> {
  await mkdir(dirname(path), { recursive: true });
  const handle = await open(path, "a+");
  try {
    // A writer that died mid-append (any process, any time) leaves a line without its
    // newline; start on a fresh line so the torn one stays alone and is reported,
    // instead of swallowing ours. One fstat and a one-byte read per append.
    const text = (await endsTorn(handle)) ? `\n${line}` : line;
    const bytes = Buffer.from(text, "utf8");
    let offset = 0;
    while (offset < bytes.length) {
      const { bytesWritten } = await handle.write(bytes, offset, bytes.length - offset);
      offset += bytesWritten;
    }
    return bytes;
  } finally {
    await handle.close();
  }
}

async function endsTorn(handle: FileHandle): Promise<boolean> {
  const { size } = await handle.stat();
  if (size === 0) return false;
  const last = Buffer.alloc(1);
  await handle.read(last, 0, 1, size - 1);
  return last[0] !== 0x0a;
}

export interface JsonLine {
  line: number;
  value: unknown;
}

export interface JsonLinesContent {
  /** False when the file does not exist (an empty log, not an error by itself). */
  exists: boolean;
  lines: JsonLine[];
  problems: RecordProblem[];
}

/**
 * Parses JSON Lines text. Blank lines are skipped. A line that is not JSON is listed as a
 * problem with its number; an unterminated last line that is not JSON is a torn line.
 */
export function parseJsonLines(text: string, file: string, parse: (text: string) => unknown = JSON.parse): Omit<JsonLinesContent, "exists"> {
  const lines: JsonLine[] = [];
  const problems: RecordProblem[] = [];
  const pieces = text.split("\n");
  const unterminated = !text.endsWith("\n");
  pieces.forEach((piece, index) => {
    const lineNumber = index + 1;
    if (piece.trim() === "") return;
    try {
      lines.push({ line: lineNumber, value: parse(piece) });
    } catch {
      const isLast = index === pieces.length - 1;
      if (isLast && unterminated) {
        problems.push({
          file,
          line: lineNumber,
          code: "LINE_TORN",
          message: `last line is cut off (${piece.length} characters, no newline): a crash during an append`,
          torn: true,
        });
      } else {
        problems.push({
          file,
          line: lineNumber,
          code: "LINE_NOT_JSON",
          message: `line is not valid JSON (${piece.length} characters; the audit does not print a file's text)`,
        });
      }
    }
  });
  return { lines, problems };
}

export async function readJsonLines(path: string, parse: (text: string) => unknown = JSON.parse): Promise<JsonLinesContent> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { exists: false, lines: [], problems: [] };
    throw error;
  }
  return { exists: true, ...parseJsonLines(text, path, parse) };
}

export function preview(text: string, length = 60): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > length ? `${flat.slice(0, length)}...` : flat;
}

/** Turns zod issues into one readable sentence naming the fields. */
export function describeIssues(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  return issues.map((issue) => (issue.path.length > 0 ? `${issue.path.map(String).join(".")}: ${issue.message}` : issue.message)).join("; ");
}
