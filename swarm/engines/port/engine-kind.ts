import type { z } from "zod";
import type { Engine } from "./engine.ts";

/**
 * An engine kind as a plug-in: what `model.kind` in swarm.yaml may name. Each kind lives in
 * its own folder (`embedded/`, `openai-compatible/`, `vllm/`), declares its configuration
 * schema and its factory there, and passes the engine conformance suite there; the
 * registry (`engine-registry.ts`) has one line per kind.
 *
 * Deliberately not part of it: HTTP, episodes, batching (the server's); how the engine
 * keeps its weights (its own); the swarm.yaml keys outside `model:`.
 */
export interface EngineKind<Schema extends z.ZodObject = z.ZodObject> {
  /** The value of `model.kind`. */
  readonly kind: string;
  /**
   * The engine's whole configuration, strict, snake_case keys: `kind` (a literal), the keys
   * a person writes under `model:`, and the fields the server fills in itself:
   * `experiment_dir` (every kind must take it) and `optimizer` (the top-level section, for a
   * kind that declares it).
   */
  readonly configSchema: Schema;
  /**
   * Makes the engine, not yet loaded. Imports its implementation when called, so parsing a
   * configuration never loads engine code.
   */
  create(config: z.output<Schema>): Engine | Promise<Engine>;
  /** The model id the gateway reports in `/v1/models` (default `a3r-embedded-policy`), from the `model:` section. */
  servedModelName?(model: Omit<z.output<Schema>, (typeof serverOwnedKeys)[number]>): string;
  /** A real language model's scale: AgentJet's lr and response lengths apply to it (`sync_train_config`). */
  readonly languageModel?: boolean;
}

/** Keys of an engine configuration that the server fills in (never written under `model:`). */
export const serverOwnedKeys = ["experiment_dir", "optimizer"] as const;

/** Declares a kind with its factory typed by its schema. */
export function defineEngineKind<Schema extends z.ZodObject>(kind: EngineKind<Schema>): EngineKind<Schema> {
  return kind;
}
