import { describe, expect, it } from "vitest";
import { parseSwarmConfig } from "../config/config.ts";
import { AgentJetConfigError, applyAgentJetConfig, isAgentJetConfig } from "./agentjet-config.ts";

const current = parseSwarmConfig("port: 0\ntrain_batch_size: 8\n", { baseDirectory: "/srv" });
const root = "/srv/swarm-experiment";

describe("applyAgentJetConfig", () => {
  it("maps what a3r understands onto the server's config and lists every other leaf as ignored", () => {
    const raw = {
      ajet: {
        experiment_name: "exp",
        data: { train_batch_size: 2, max_prompt_length: 100 },
        rollout: { num_repeat: 3, max_env_worker: 5 },
        swarm_mode_sample_collection_method: "rollout_until_any_client_agree_sync_weight",
        trainer_common: { optim: { lr: 1e-6 }, save_freq: 7 },
        interchange_server: {},
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
    });
    // The embedded engine keeps its own lr: AgentJet's is a language model's scale.
    expect(mapping.config.optimizer.lr).toBe(current.optimizer.lr);
    expect(mapping.ignored).toEqual([
      "ajet.trainer_common.optim.lr (only with model.kind vllm (this server runs embedded); set it in swarm.yaml)",
      "ajet.data.max_prompt_length",
      "ajet.interchange_server",
      "defaults",
    ]);
  });

  it("keeps the experiment under the server's root whatever the client names it", () => {
    for (const [tree, folder] of [
      [{ experiment_dir: "/etc/cron.d" }, "cron.d"],
      [{ experiment_name: "../../root/.ssh" }, ".._.._root_.ssh"],
      [{ experiment_name: "..", experiment_dir: "auto" }, undefined],
      [{ experiment_name: "read_yaml_name" }, undefined],
    ] as const) {
      const dir = applyAgentJetConfig({ ajet: tree }, current, root).config.experiment_dir;
      expect(dir).toBe(folder === undefined ? root : `${root}/${folder}`);
    }
  });

  it("refuses a value a3r would refuse, naming AgentJet's key and a3r's", () => {
    const refused = (() => {
      try {
        applyAgentJetConfig({ ajet: { data: { train_batch_size: 0 } } }, current, root);
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(refused).toBeInstanceOf(AgentJetConfigError);
    expect((refused as Error).message).toMatch(/^ajet\.data\.train_batch_size \(a3r's train_batch_size\): /);
    expect(() => applyAgentJetConfig({ ajet: "text" }, current, root)).toThrow("ajet: must be a mapping");
  });
});
