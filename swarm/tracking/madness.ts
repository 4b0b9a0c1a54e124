/**
 * AgentJet's "madness" checks (`ajet.rollout.compute_madness_checklist`): signs that the
 * policy has lost control of its output. An episode with a mad completion is trained with
 * `agent_madness_reward` instead of its reward. Written from AgentJet's documented
 * behaviour; the checks, by checklist name:
 *
 * - `nonsense`: a chat-template marker (`<|im_start|>`) in the text, a word or a character
 *   that keeps recurring within a short window (a loop), and, unless `non_ascii` is listed
 *   too, a character outside ASCII, common symbols, CJK and emoji (AgentJet's switch reads
 *   this way round: listing `non_ascii` stops that check).
 * - `format_type_1`: the text is not exactly one `<think>…</think>` then one fenced python block.
 * - `wrong_toolcall`: a `<tool_call>` block that is unclosed or not a JSON object with a name
 *   (only on calls that were offered tools).
 */
export const madnessChecks = ["nonsense", "non_ascii", "format_type_1", "wrong_toolcall"] as const;

// Allowed beside ASCII: common symbols, CJK ideographs and punctuation, emoji.
const allowedNonAscii =
  "‘’“”–—…•™©®°±µ′″℉℃·×，。！？、；：（）【】《》「」『』" +
  "\\u{1F300}-\\u{1FAFF}\\u{2702}-\\u{27B0}\\u{24C2}-\\u{1F251}" +
  "\\u{4E00}-\\u{9FFF}\\u{3400}-\\u{4DBF}\\u{20000}-\\u{2CEAF}\\u{F900}-\\u{FAFF}\\u{2F800}-\\u{2FA1F}";
const disallowedCharacter = new RegExp(`[^\\u{0}-\\u{7F}${allowedNonAscii}]`, "u");

/** True when some item recurs inside a window of `remember` recent new items `patience` times without a new one. */
function loops(items: readonly string[], remember: number, patience: number): boolean {
  const window: string[] = [];
  let left = patience;
  for (const item of items) {
    if (!window.includes(item)) {
      window.push(item);
      if (window.length > remember) window.shift();
      left = patience;
    } else {
      left -= 1;
      if (left <= 0) return true;
    }
  }
  return false;
}

function nonsense(text: string, checkNonAscii: boolean): boolean {
  if (text.includes("<|im_start|>")) return true;
  if (checkNonAscii && disallowedCharacter.test(text)) return true;
  return loops(text.split(/\s+/).filter(Boolean), 5, 10) || loops([...text], 4, 200);
}

function wrongFormatType1(text: string): boolean {
  const trimmed = text.trim();
  if (!trimmed.startsWith("<think>")) return true;
  if (trimmed.split("<think>").length !== 2 || trimmed.split("</think>").length !== 2) return true;
  const end = trimmed.indexOf("</think>");
  if (end < trimmed.indexOf("<think>")) return true;
  const rest = (trimmed.slice(0, trimmed.indexOf("<think>")) + trimmed.slice(end + "</think>".length)).trim();
  return !rest.startsWith("```python") || !rest.endsWith("```") || rest.split("```python").length !== 2 || rest.split("```").length !== 3;
}

function wrongToolCall(text: string): boolean {
  const opened = text.split("<tool_call>").length - 1;
  const closed = text.split("</tool_call>").length - 1;
  if (opened !== closed) return true;
  for (const match of text.matchAll(/<tool_call>([\s\S]*?)<\/tool_call>/g)) {
    try {
      const value = JSON.parse(match[1]!) as unknown;
      if (typeof value !== "object" || value === null || typeof (value as { name?: unknown }).name !== "string") return true;
    } catch {
      return true;
    }
  }
  return false;
}

/** Whether one completion is mad by the checklist. */
export function isMad(text: string, checklist: readonly string[], offeredTools: boolean): boolean {
  if (checklist.includes("nonsense") && nonsense(text, !checklist.includes("non_ascii"))) return true;
  if (checklist.includes("format_type_1") && wrongFormatType1(text)) return true;
  return checklist.includes("wrong_toolcall") && offeredTools && wrongToolCall(text);
}
