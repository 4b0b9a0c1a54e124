import type { ChatMessage } from "../engines/port/engine.ts";
import type { RecordedCall } from "./recorded-call.ts";

/** Exact comparisons of the parts of a recorded call, cheap on the common shapes. */

/** JSON with object keys sorted, so `{a, b}` and `{b, a}` are the same tool schema. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, item]) => item !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(",")}}`;
}

const toolsKeys = new WeakMap<readonly unknown[], string>();

/** The tool schemas a call was offered, as one comparable string ("[]" for none). */
export function toolsKey(call: RecordedCall): string {
  const tools = call.tools;
  if (!tools || tools.length === 0) return "[]";
  let key = toolsKeys.get(tools);
  if (key === undefined) {
    key = canonicalJson(tools);
    toolsKeys.set(tools, key);
  }
  return key;
}

export function sameTools(a: RecordedCall, b: RecordedCall): boolean {
  return a.tools === b.tools || toolsKey(a) === toolsKey(b);
}

/** Role, content and every other field the client sent (name, tool_call_id, ...). */
export function sameMessage(a: ChatMessage, b: ChatMessage): boolean {
  if (a.role !== b.role || a.content !== b.content) return false;
  const aKeys = Object.keys(a);
  const bKeys = Object.keys(b);
  // The common shape, {role, content}, needs nothing more.
  if (aKeys.length === 2 && bKeys.length === 2) return true;
  const extra = (message: ChatMessage): string => canonicalJson({ ...message, role: "", content: "" });
  return extra(a) === extra(b);
}

export function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && startsWith(a, b, 0);
}

export function startsWith(haystack: readonly number[], needle: readonly number[], offset: number): boolean {
  if (haystack.length < offset + needle.length) return false;
  for (let index = 0; index < needle.length; index++) {
    if (haystack[offset + index] !== needle[index]) return false;
  }
  return true;
}
