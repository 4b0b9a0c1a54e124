import { describe, expect, it } from "vitest";
import { parseSwarmConfig } from "../config/config.ts";
import { AgentJetConfigError, applyAgentJetConfig, callMaxTokens, contextOverflow, contextOverflowText, isAgentJetConfig } from "./agentjet-config.ts";
import { createWordTokenizer } from "../engines/embedded/tokenizer.ts";

const current = parseSwarmConfig("port: 0\ntrain_batch_size: 8\n", { baseDirectory: "/srv" });
const root = "/srv/swarm-experiment";

function refusal(run: () => unknown): AgentJetConfigError {
  try {
    run();
  } catch (error) {
    if (error instanceof AgentJetConfigError) return error;
    throw error;
  }
  throw new Error("not refused");
}

describe("applyAgentJetConfig", () => {
  it("maps what a3r does, applies AgentJet's defaults for what is absent, and says why the rest is ignored", () => {
    const raw = {
      ajet: {
        experiment_name: "exp",
        data: { train_batch_size: 2, max_prompt_length: 100 },
        rollout: { num_repeat: 3, max_env_worker: 5, multi_turn: { max_sample_per_task: 4 }, force_disable_toolcalls: true },
        swarm_mode_sample_collection_method: "rollout_until_any_client_agree_sync_weight",
        trainer_common: { optim: { lr: 1e-6 }, save_freq: 7, total_epochs: 3 },
        interchange_server: {},
        no_such_key: 1,
      },
      defaults: ["x"],
    };
    expect(isAgentJetConfig(raw)).toBe(true);
    const mapping = applyAgentJetConfig(raw, current, root);
    expect(mapping.config).toMatchObject({
      train_batch_size: 2,
      num_repeat: 3,
      max_env_worker: 5,
      save_freq: 7,
      swarm_mode_sample_collection_method: "rollout_until_any_client_agrees_sync_weight",
      experiment_dir: "/srv/swarm-experiment/exp",
      port: current.port,
      // AgentJet's merge defaults, absent from the tree, are in force.
      compare_level: "text",
      ignore_tools: true,
      disable_tool_calls: true,
      // 3 epochs of AgentJet's 1000 dummy tasks at 2 a step.
      max_steps: 1500,
      limits: { max_prompt_tokens: 100, max_response_tokens: 15000, max_model_len: 18000, max_samples_per_episode: 4, max_tokens_per_call: 4096 },
    });
    // The embedded engine keeps its own lr and max_tokens: AgentJet's are a language model's scale.
    expect(mapping.config.optimizer.lr).toBe(current.optimizer.lr);
    expect(mapping.config.sampling.max_tokens).toBe(current.sampling.max_tokens);
    expect(mapping.mapped).toContain(
      `compare_level ← ajet.context_tracker.timeline_merging_policy.timeline_compare_level = "text" (AgentJet's default) (text_and_image is text)`,
    );
    expect(mapping.ignored).toEqual([
      "ajet.trainer_common.optim.lr: only with model.kind vllm (this server runs embedded); set it in swarm.yaml",
      "ajet.interchange_server: a3r's server is the interchange (host and port are the server's)",
      "ajet.no_such_key: not a key of AgentJet's schema that a3r knows; no effect",
      "defaults: outside ajet:, AgentJet's launcher or another tool reads it; no effect",
    ]);
  });

  it("keeps the experiment under the server's root whatever the job names it; auto is {root}/{experiment_name}", () => {
    for (const [tree, folder] of [
      [{ experiment_dir: "/etc/cron.d" }, "cron.d"],
      [{ experiment_name: "../../root/.ssh" }, ".._.._root_.ssh"],
      [{ experiment_name: "..", experiment_dir: "auto" }, undefined],
      [{ experiment_name: "run-7", experiment_dir: "auto" }, "run-7"],
      [{ experiment_name: "read_yaml_name" }, undefined],
    ] as const) {
      const dir = applyAgentJetConfig({ ajet: tree }, current, root).config.experiment_dir;
      expect(dir).toBe(folder === undefined ? root : `${root}/${folder}`);
    }
    expect(applyAgentJetConfig({ ajet: { experiment_dir: "auto" } }, current, root, { yamlName: "wolves" }).config.experiment_dir).toBe(`${root}/wolves`);
  });

  it("refuses what a3r cannot train as asked, naming every such key and why; the value a3r follows passes", () => {
    const error = refusal(() =>
      applyAgentJetConfig({ ajet: { rollout: { gamma: 0.9 }, trainer_common: { ppo_epochs: 2, algorithm: { adv_estimator: "gae" } } } }, current, root),
    );
    expect(error.path).toBe("ajet.rollout.gamma");
    expect(error.message).toContain("ajet.trainer_common.ppo_epochs = 2: a3r takes one optimizer pass per batch");
    expect(error.message).toContain('ajet.trainer_common.algorithm.adv_estimator = "gae": a3r\'s engines train GRPO only');
    const agreed = applyAgentJetConfig({ ajet: { rollout: { gamma: 1, top_k: -1 } } }, current, root);
    expect(agreed.mapped).toContain("ajet.rollout.gamma = 1 (what a3r does)");
    // AgentJet's own assertion: prompt + response must fit the model length.
    expect(refusal(() => applyAgentJetConfig({ ajet: { data: { max_prompt_length: 9000 } } }, current, root)).path).toBe("ajet.rollout.max_model_len");
  });

  it("refuses a value a3r would refuse, naming AgentJet's key and a3r's", () => {
    expect(refusal(() => applyAgentJetConfig({ ajet: { data: { train_batch_size: 0 } } }, current, root)).message).toMatch(
      /^ajet\.data\.train_batch_size \(a3r's train_batch_size\): /,
    );
    expect(refusal(() => applyAgentJetConfig({ ajet: { rollout: { compute_madness_checklist: ["vibes"] } } }, current, root)).path).toBe(
      "ajet.rollout.compute_madness_checklist (a3r's madness.checklist.0)",
    );
    expect(() => applyAgentJetConfig({ ajet: "text" }, current, root)).toThrow("ajet: must be a mapping");
  });
});

describe("the gateway's per-call limits (max_response_length_in_one_turn, max_model_len)", () => {
  const tokenizer = createWordTokenizer(["a", "b"]);
  const limited = { ...current, limits: { ...current.limits, max_tokens_per_call: 4, max_model_len: 10 } };
  it("lowers max_tokens to the cap and answers AgentJet's overflow message when the prompt leaves no room", () => {
    expect(callMaxTokens(limited, 100, 8192)).toBe(4);
    expect(callMaxTokens(current, undefined, 8192)).toBe(current.sampling.max_tokens);
    // [user a a E assistant] = 5 tokens < 10 - 4.
    expect(contextOverflow(limited, tokenizer, [{ role: "user", content: "a a" }], 4)).toBeUndefined();
    const overflow = contextOverflow(limited, tokenizer, [{ role: "user", content: "a a b b" }], 4);
    expect(overflow?.result).toMatchObject({ text: contextOverflowText, completionTokenIds: [] });
    expect(overflow?.warning).toContain("limits.max_model_len 10 leaves room for 6");
    expect(contextOverflow(current, tokenizer, [{ role: "user", content: "a a b b" }], 4)).toBeUndefined();
  });

  it("tokenizes the prompt only when its size could reach the limit", () => {
    let encoded = 0;
    const counting = {
      encodeChat: (...args: Parameters<typeof tokenizer.encodeChat>) => {
        encoded += 1;
        return tokenizer.encodeChat(...args);
      },
    };
    const roomy = { ...current, limits: { ...current.limits, max_tokens_per_call: 4, max_model_len: 18000 } };
    expect(contextOverflow(roomy, counting, [{ role: "user", content: "a b" }], 4)).toBeUndefined();
    expect(encoded).toBe(0);
    expect(contextOverflow(roomy, counting, [{ role: "user", content: "a ".repeat(20_000) }], 4)).toBeDefined();
    expect(encoded).toBe(1);
  });
});
