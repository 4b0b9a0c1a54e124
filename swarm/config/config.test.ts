import { describe, expect, it } from "vitest";
import { z } from "zod";
import { parseSwarmConfig, SwarmConfigError, swarmConfigSchema } from "./config.ts";
import { canonicalKeys, snakeCase } from "./config-keys.ts";

function errorOf(text: string): SwarmConfigError {
  try {
    parseSwarmConfig(text, { file: "swarm.yaml", baseDirectory: "/base" });
  } catch (error) {
    if (error instanceof SwarmConfigError) return error;
    throw error;
  }
  throw new Error("expected the configuration to be rejected");
}

describe("parseSwarmConfig", () => {
  it("fills defaults and resolves experiment_dir against the config folder", () => {
    const config = parseSwarmConfig("train_batch_size: 2\nexperiment_dir: runs/x\n", { baseDirectory: "/base" });
    expect(config.train_batch_size).toBe(2);
    expect(config.num_repeat).toBe(4);
    expect(config.swarm_mode_sample_collection_method).toBe("rollout_until_finish_enough_tasks");
    expect(config.experiment_dir).toBe("/base/runs/x");
    expect(config.model.kind).toBe("embedded");
    expect(config.limits.max_episode_calls).toBeGreaterThan(0);
  });

  it("treats an empty file as all defaults", () => {
    expect(parseSwarmConfig("", { baseDirectory: "/b" }).port).toBe(10086);
  });

  it("names an unknown nested key with its path, line and a suggestion", () => {
    const error = errorOf("train_batch_size: 2\noptimizer:\n  lrr: 0.1\n");
    expect(error.message).toBe('unknown key "optimizer.lrr" — did you mean "lr"?');
    expect(error.line).toBe(3);
    expect(error.where).toBe("swarm.yaml:3");
    expect(error.hint).toContain("kl_coef");
  });

  it("rejects an unknown top-level key", () => {
    const error = errorOf("num_repeats: 4\n");
    expect(error.message).toContain('"num_repeats"');
    expect(error.message).toContain('did you mean "num_repeat"');
    expect(error.line).toBe(1);
  });

  it("rejects unknown keys inside the model section of either engine kind", () => {
    const error = errorOf("model:\n  kind: openai-compatible\n  base_url: http://localhost:1/v1\n  model: m\n  baseurl2: x\n");
    expect(error.message).toContain('unknown key "model.baseurl2"');
    expect(error.line).toBe(5);
  });

  it("reports wrong types with the field and line", () => {
    const error = errorOf("train_batch_size: 2\nnum_repeat: four\n");
    expect(error.field).toBe("num_repeat");
    expect(error.line).toBe(2);
    expect(error.hint).toContain("number");
  });

  it("lists the allowed values of an enum", () => {
    const error = errorOf("swarm_mode_sample_collection_method: whenever\n");
    expect(error.hint).toContain("rollout_until_finish_enough_episodes");
  });

  it("reports YAML syntax errors with their line", () => {
    const error = errorOf("port: 1\nsampling:\n  temperature: [1,\n");
    expect(error.message).toContain("YAML syntax error");
    expect(error.line).toBeGreaterThanOrEqual(3);
  });

  it("rejects duplicate keys", () => {
    expect(errorOf("port: 1\nport: 2\n").message).toContain("YAML syntax error");
  });

  it("accepts AgentJet's spelling of C5 as the same method", () => {
    const config = parseSwarmConfig("swarm_mode_sample_collection_method: rollout_until_any_client_agree_sync_weight\n", { baseDirectory: "/b" });
    expect(config.swarm_mode_sample_collection_method).toBe("rollout_until_any_client_agrees_sync_weight");
  });

  it("refuses an optimizer clip the engines refuse, naming the field, its line and the bound", () => {
    const error = errorOf("train_batch_size: 2\noptimizer:\n  clip: 5\n");
    expect(error.field).toBe("optimizer.clip");
    expect(error.line).toBe(3);
    expect(error.message).toMatch(/optimizer\.clip.*<=\s*1/);
  });

  it("has caps on claims: per client, the idle timeout a claim may ask for, and the drain deadline", () => {
    const config = parseSwarmConfig("max_claims_per_client: 3\nmax_discard_episode_timeout: 120\ndrain_timeout: 30\n", { baseDirectory: "/b" });
    expect([config.max_claims_per_client, config.max_discard_episode_timeout, config.drain_timeout]).toEqual([3, 120, 30]);
    expect(errorOf("drain_timeout: 0\n").field).toBe("drain_timeout");
  });

  it("takes a key's old camelCase spelling as an alias, saying once per key where it is and what to write", () => {
    const lines: string[] = [];
    const text = [
      "model:",
      "  kind: vllm",
      "  model: tiny",
      "  maxRestarts: 2",
      "  inference:",
      "    gpuMemoryUtilization: 0.5",
      "    startTimeoutMs: 1000",
      "  trainer: { microBatchTokens: 64, env: { myVar: x } }",
    ].join("\n");
    const config = parseSwarmConfig(text, { file: "swarm.yaml", baseDirectory: "/b", onDeprecation: (line) => lines.push(line) });
    const model = config.model as unknown as { max_restarts: number; inference: Record<string, unknown>; trainer: Record<string, unknown> };
    expect(model.max_restarts).toBe(2);
    expect(model.inference).toMatchObject({ gpu_memory_utilization: 0.5, start_timeout_ms: 1000 });
    // Only keys of the schema are renamed: the names of environment variables stay as written.
    expect(model.trainer).toMatchObject({ micro_batch_tokens: 64, env: { myVar: "x" } });
    expect(lines).toEqual([
      'swarm.yaml:4: deprecated key "model.maxRestarts": write "model.max_restarts" (the camelCase spelling still works for now)',
      'swarm.yaml:6: deprecated key "model.inference.gpuMemoryUtilization": write "model.inference.gpu_memory_utilization" (the camelCase spelling still works for now)',
      'swarm.yaml:7: deprecated key "model.inference.startTimeoutMs": write "model.inference.start_timeout_ms" (the camelCase spelling still works for now)',
      'swarm.yaml:8: deprecated key "model.trainer.microBatchTokens": write "model.trainer.micro_batch_tokens" (the camelCase spelling still works for now)',
    ]);
    // Errors under an old spelling name the new one, on the old key's line.
    const error = errorOf("model:\n  kind: openai-compatible\n  model: m\n  baseUrl: not-a-url\n");
    expect([error.field, error.line]).toEqual(["model.base_url", 4]);
  });

  it("takes the new spelling when a key is given in both (an override in the new spelling onto an old file), saying the old one is ignored", () => {
    const lines: string[] = [];
    const config = parseSwarmConfig("model:\n  kind: embedded\n  embedded:\n    featureBits: 12\n    feature_bits: 10\n", {
      file: "swarm.yaml",
      baseDirectory: "/b",
      onDeprecation: (line) => lines.push(line),
    });
    expect(config.model).toMatchObject({ embedded: { feature_bits: 10 } });
    expect(lines).toEqual([
      'swarm.yaml:4: deprecated key "model.embedded.featureBits" ignored: "model.embedded.feature_bits" is given too, and wins (remove "model.embedded.featureBits")',
    ]);
    const parsed = swarmConfigSchema.safeParse({ model: { kind: "embedded", embedded: { featureBits: 12, feature_bits: 10 } } });
    expect(parsed.success && parsed.data.model).toMatchObject({ embedded: { feature_bits: 10 } });
  });

  it("accepts the old spellings through the schema alone too (the leader's audit checks overrides with it)", () => {
    const parsed = swarmConfigSchema.safeParse({ model: { kind: "openai-compatible", baseUrl: "http://127.0.0.1:1/v1", model: "m" } });
    expect(parsed.success && parsed.data.model).toMatchObject({ base_url: "http://127.0.0.1:1/v1" });
    expect(swarmConfigSchema.safeParse({ model: { kind: "embedded", seeed: 1 } }).success).toBe(false);
  });

  it("finds a key's old spelling through a transformed or preprocessed object (vLLM's trainer is one)", () => {
    const object = z.strictObject({ micro_batch_tokens: z.number() });
    for (const schema of [object.transform((value) => value), z.preprocess((value) => value, object)]) {
      const { value, renamed } = canonicalKeys({ microBatchTokens: 64 }, schema);
      expect(value).toEqual({ micro_batch_tokens: 64 });
      expect(renamed.map((key) => key.to)).toEqual(["micro_batch_tokens"]);
    }
  });

  it("spells keys in snake_case", () => {
    expect(["gpuMemoryUtilization", "startTimeoutMs", "baseUrl", "kl_coef", "lr"].map(snakeCase)).toEqual([
      "gpu_memory_utilization",
      "start_timeout_ms",
      "base_url",
      "kl_coef",
      "lr",
    ]);
  });
});
