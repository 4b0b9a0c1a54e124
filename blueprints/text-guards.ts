import { problem } from "./finding.ts";
import type { Problem } from "./finding.ts";
import { lineOfOffset } from "./finding.ts";

/** A blueprint is a page of text; anything larger is a mistake or an attack, not a plan. */
export const maxBlueprintBytes = 1024 * 1024;

const tooLargeHint = "a blueprint is a page of markdown: move data and logs out of it (at most 1 MiB)";
const binaryHint = "give the markdown blueprint itself, saved as UTF-8 text";

/** Refuses text that is too large or holds NUL bytes; undefined when it is fine. */
export function guardText(text: string): Problem | undefined {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > maxBlueprintBytes) return problem("FILE_TOO_LARGE", 0, `the blueprint is ${bytes} bytes, over the 1 MiB limit`, tooLargeHint);
  const nul = text.indexOf("\u0000");
  if (nul !== -1) return problem("FILE_BINARY", lineOfOffset(text, nul), "the blueprint holds a NUL byte: it is binary, not markdown", binaryHint);
  return undefined;
}

/** Decodes file bytes as strict UTF-8 after the size and NUL checks. */
export function decodeBlueprintBytes(bytes: Uint8Array): { text: string } | { problem: Problem } {
  if (bytes.byteLength > maxBlueprintBytes) {
    return { problem: problem("FILE_TOO_LARGE", 0, `the file is ${bytes.byteLength} bytes, over the 1 MiB limit`, tooLargeHint) };
  }
  const nul = bytes.indexOf(0);
  if (nul !== -1) {
    const line = 1 + bytes.subarray(0, nul).reduce((count, byte) => count + (byte === 10 ? 1 : 0), 0);
    return { problem: problem("FILE_BINARY", line, "the file holds a NUL byte: it is binary, not markdown", binaryHint) };
  }
  try {
    return { text: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
  } catch {
    return { problem: problem("FILE_BINARY", 0, "the file is not valid UTF-8 text", binaryHint) };
  }
}

/** One form for every reader: no byte-order mark, `\n` line ends (line numbers unchanged). */
export function normalizeNewlines(text: string): string {
  return text.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
}
