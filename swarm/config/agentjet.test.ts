import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadSwarmConfig, parseSwarmConfig, SwarmConfigError } from "./config.ts";
import type { AgentJetMapping } from "./agentjet.ts";

/**
 * AgentJet jobs' YAML as `a3r swarm check` and `swarm serve --config` load it. The three
 * fixtures follow AgentJet's tutorial configs (math agent, frozen lake, werewolves swarm)
 * key for key, written for these tests; none sets every merge key, so AgentJet's defaults
 * must apply where it is silent.
 */
const fixtures = join(import.meta.dirname, "__fixtures__", "agentjet");

async function load(name: string): Promise<{ config: Awaited<ReturnType<typeof loadSwarmConfig>>; mapping: AgentJetMapping }> {
  let mapping: AgentJetMapping | undefined;
  const config = await loadSwarmConfig(join(fixtures, `${name}.yaml`), { onAgentJet: (given) => (mapping = given) });
  return { config, mapping: mapping! };
}

describe("AgentJet's YAML through the config loader (swarm check, swarm serve --config)", () => {
  it("math agent: AgentJet's default merge policy, its length limits, sample cap, madness checklist; epochs of a dataset it cannot count are said so", async () => {
    const { config, mapping } = await load("math-agent");
    expect(config).toMatchObject({
      compare_level: "text",
      ignore_tools: true,
      train_batch_size: 8,
      num_repeat: 4,
      max_steps: 0,
      madness: { checklist: ["nonsense", "wrong_toolcall"], reward: 0, terminate: true },
      limits: { max_prompt_tokens: 3000, max_response_tokens: 7000, max_model_len: 10000, max_tokens_per_call: 1024, max_samples_per_episode: 2 },
      experiment_dir: join(fixtures, "swarm-experiment", "math-run"),
    });
    expect(mapping.ignored).toContainEqual(expect.stringMatching(/^ajet\.trainer_common\.total_epochs: the tasks come from the client.*total_training_steps/));
    expect(mapping.ignored).toContainEqual(expect.stringMatching(/^trinity: outside ajet:/));
  });

  it("frozen lake: tool calls off, total_training_steps over total_epochs, its own caps", async () => {
    const { config } = await load("frozenlake");
    expect(config).toMatchObject({
      compare_level: "text",
      ignore_tools: true,
      disable_tool_calls: true,
      max_steps: 25,
      max_env_worker: 256,
      limits: { max_prompt_tokens: 4000, max_response_tokens: 18000, max_model_len: 22000, max_tokens_per_call: 512, max_samples_per_episode: 20 },
      madness: { checklist: [] },
    });
    expect(config.sampling.temperature).toBe(0.9);
  });

  it("werewolves swarm: its own merge policy wins over AgentJet's default; epochs of the dummy reader become steps; experiment auto names the run after the file", async () => {
    const { config, mapping } = await load("werewolves");
    expect(config).toMatchObject({
      compare_level: "token",
      ignore_tools: false,
      num_repeat: 6,
      max_steps: 2 * 250,
      madness: { checklist: ["nonsense"], reward: -0.5 },
      experiment_dir: join(fixtures, "swarm-experiment", "werewolves"),
    });
    expect(mapping.mapped).toContain('compare_level ← ajet.context_tracker.timeline_merging_policy.timeline_compare_level = "token" (text_and_image is text)');
  });

  it("takes a3r's own keys from an a3r: section, and names the line of a refused or invalid AgentJet key", () => {
    const config = parseSwarmConfig("a3r:\n  model: { kind: embedded, seed: 7 }\n  port: 0\najet:\n  data: { train_batch_size: 3 }\n", { baseDirectory: "/b" });
    expect(config).toMatchObject({ port: 0, train_batch_size: 3, model: { kind: "embedded", seed: 7 } });
    const refused = (text: string): SwarmConfigError => {
      try {
        parseSwarmConfig(text, { file: "job.yaml", baseDirectory: "/b" });
      } catch (error) {
        if (error instanceof SwarmConfigError) return error;
        throw error;
      }
      throw new Error("accepted");
    };
    const gamma = refused("ajet:\n  rollout:\n    num_repeat: 2\n    gamma: 0.5\n");
    expect([gamma.where, gamma.field]).toEqual(["job.yaml:4", "ajet.rollout.gamma"]);
    expect(gamma.message).toContain("a3r rewards every turn with the episode's reward");
    const level = refused("ajet:\n  context_tracker:\n    timeline_merging_policy:\n      timeline_compare_level: pixels\n");
    expect(level.where).toBe("job.yaml:4");
    expect(level.message).toContain("ajet.context_tracker.timeline_merging_policy.timeline_compare_level (a3r's compare_level)");
    const section = refused("a3r:\n  trian_batch_size: 2\najet: {}\n");
    expect([section.where, section.field]).toEqual(["job.yaml:2", "a3r.trian_batch_size"]);
  });
});
