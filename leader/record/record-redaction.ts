import type { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { redactSecrets, secretValuesFromEnv } from "../../core/redact.ts";

/**
 * What the leader keeps for itself (leader.sqlite, leader-answers/) holds no secret value:
 * every string is redacted (core/redact.ts) before it is stored, except the text of a
 * blueprint between design and audit (`{ blueprintId, text }`), which is the very file the
 * audit writes and a worker runs: redacting it would change what runs after a restart. Its
 * secrets are references already: the campaign's topic holds the command's secrets as
 * `${A3R_SECRET_*}` (cli/research/topic-option.ts), and plans and analyses are built
 * from redacted text.
 */
export function redactLeaderRecord<T>(value: T, knownSecrets: string[] = secretValuesFromEnv()): T {
  const walk = (item: unknown): unknown => {
    if (typeof item === "string") return redactSecrets(item, knownSecrets);
    if (Array.isArray(item)) return item.map(walk);
    if (item === null || typeof item !== "object" || Object.getPrototypeOf(item) !== Object.prototype) return item;
    const entries = Object.entries(item);
    const isBlueprintText = typeof (item as { blueprintId?: unknown }).blueprintId === "string" && typeof (item as { text?: unknown }).text === "string";
    return Object.fromEntries(entries.map(([key, inner]) => [key, isBlueprintText && key === "text" ? inner : walk(inner)]));
  };
  return walk(value) as T;
}

type Serializer = SqliteSaver["serde"];

/**
 * The checkpointer's serializer with redaction: LangGraph's own (JSON) serializes, the
 * JSON is parsed, its strings redacted as above, and written again; reading is LangGraph's.
 * Redacting the parsed value, not the text, keeps the JSON well formed whatever a pattern takes.
 */
export function redactingSerializer(inner: Serializer): Serializer {
  return {
    async dumpsTyped(data: unknown): Promise<[string, Uint8Array]> {
      const [type, bytes] = await inner.dumpsTyped(data);
      if (type !== "json") return [type, bytes];
      let parsed: unknown;
      try {
        parsed = JSON.parse(new TextDecoder().decode(bytes));
      } catch {
        return [type, bytes];
      }
      return [type, new TextEncoder().encode(JSON.stringify(redactLeaderRecord(parsed)))];
    },
    loadsTyped: (type: string, data: Uint8Array | string) => inner.loadsTyped(type, data),
  };
}
