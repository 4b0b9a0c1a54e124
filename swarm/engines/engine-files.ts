import { rename, writeFile } from "node:fs/promises";

/** File helpers the engines share (swarm/ imports nothing from the rest of a3r, core/ included). */

/** The parsed JSON, or undefined for text that is not JSON (the caller's schema says what is wrong). */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Temp file + rename, so a crash mid-write leaves the previous file (or none), never half of one. */
export async function writeFileAtomically(path: string, content: string): Promise<void> {
  const temporary = `${path}.tmp-${process.pid}-${Date.now()}`;
  await writeFile(temporary, content);
  await rename(temporary, path);
}
