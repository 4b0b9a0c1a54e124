import { z } from "zod";
import { embeddedEngineKind } from "./embedded/embedded-kind.ts";
import type { Engine } from "./port/engine.ts";
import { delegatingSchema } from "./port/delegating-schema.ts";
import type { EngineConfig } from "./port/engine-config.ts";
import { type EngineKind, serverOwnedKeys } from "./port/engine-kind.ts";
import { openAiCompatibleEngineKind } from "./openai-compatible/openai-compatible-kind.ts";
import { vllmEngineKind } from "./vllm/vllm-kind.ts";

/**
 * The engine kinds `model.kind` may name: one registration line per kind. A new kind is
 * its own folder (schema, factory and conformance test, as `embedded/`) plus one line here;
 * `registerEngineKind` adds one at run time (a plug-in, or a test's throwaway kind).
 */
const kinds = new Map<string, EngineKind>();
let cached: { model: z.ZodType; engine: z.ZodType } | undefined;
registerEngineKind(embeddedEngineKind);
registerEngineKind(openAiCompatibleEngineKind);
registerEngineKind(vllmEngineKind);

/** A `model:` section as parsed: its kind's keys, without the server-owned ones. */
export interface ModelConfig {
  kind: string;
  [key: string]: unknown;
}

/** Adds a kind; returns a function that removes it again. A kind name may be taken once. */
export function registerEngineKind(kind: EngineKind): () => void {
  const shape = kind.configSchema.shape;
  const literal = shape.kind as z.ZodType | undefined;
  if (!(literal instanceof z.ZodLiteral) || literal.value !== kind.kind) {
    throw new TypeError(`engine kind "${kind.kind}": its configSchema must have kind: z.literal("${kind.kind}")`);
  }
  if (!("experiment_dir" in shape)) throw new TypeError(`engine kind "${kind.kind}": its configSchema must take experiment_dir`);
  if (kinds.has(kind.kind)) throw new TypeError(`engine kind "${kind.kind}" is registered already`);
  kinds.set(kind.kind, kind as unknown as EngineKind);
  cached = undefined;
  return () => {
    if (kinds.get(kind.kind) === (kind as unknown)) kinds.delete(kind.kind);
    cached = undefined;
  };
}

export function engineKind(name: string): EngineKind | undefined {
  return kinds.get(name);
}

export function engineKindNames(): string[] {
  return [...kinds.keys()];
}

function schemas(): { model: z.ZodType; engine: z.ZodType } {
  if (cached) return cached;
  const all = [...kinds.values()];
  const modelOptions = all.map((kind) => {
    const owned = serverOwnedKeys.filter((key) => key in kind.configSchema.shape);
    return kind.configSchema.omit(Object.fromEntries(owned.map((key) => [key, true])) as Record<string, true>);
  });
  const union = (options: z.ZodObject[]) => z.discriminatedUnion("kind", options as [z.ZodObject, ...z.ZodObject[]]);
  cached = { model: union(modelOptions), engine: union(all.map((kind) => kind.configSchema)) };
  return cached;
}

/**
 * swarm.yaml's `model:` section: every registered kind's configuration without the fields
 * the server fills in (`experiment_dir` from `experiment_dir`, `optimizer` from the
 * top-level `optimizer`). Strict: unknown keys fail. Read at parse time, so a kind
 * registered later is known.
 */
export const modelConfigSchema = delegatingSchema(() => schemas().model as z.ZodType<ModelConfig>);

/** A whole engine configuration of any registered kind (strict). */
export const engineConfigSchema = delegatingSchema(() => schemas().engine as z.ZodType<EngineConfig>);

/** The only place that picks an engine implementation from configuration. */
export async function createEngine(config: EngineConfig): Promise<Engine> {
  const parsed = engineConfigSchema.parse(config);
  return kinds.get(parsed.kind)!.create(parsed);
}

/** The fields the server fills in for a kind: `experiment_dir` always, `optimizer` where the kind takes it. */
export function takesOptimizer(kindName: string): boolean {
  const kind = kinds.get(kindName);
  return kind !== undefined && "optimizer" in kind.configSchema.shape;
}
