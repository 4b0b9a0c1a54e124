import { describe, expect, it } from "vitest";
import { parseSwarmConfig } from "../../config/config.ts";
import { SwarmConfigError } from "../../config/config-error.ts";
import { inferenceArgv } from "./inference-server.ts";
import { maxLoraRankFor, vllmLoraRanks } from "./vllm-arguments.ts";
import { type VllmEngineConfigInput, vllmEngineConfigSchema } from "./vllm-config.ts";

const base: VllmEngineConfigInput = {
  kind: "vllm",
  model: "Qwen/Qwen2.5-0.5B-Instruct",
  optimizer: { lr: 1e-5, kl_coef: 0, clip: 0.2 },
  experiment_dir: "/tmp/unused",
};

function argvOf(overrides: Partial<VllmEngineConfigInput>): string[] {
  return inferenceArgv(vllmEngineConfigSchema.parse({ ...base, ...overrides }), 8001);
}

/** The value after `flag` in an argv. */
function flagValue(argv: string[], flag: string): string | undefined {
  const index = argv.indexOf(flag);
  return index < 0 ? undefined : argv[index + 1];
}

/** swarm check's error for a `model:` section, or undefined when it loads. */
function checkError(modelYaml: string[]): SwarmConfigError | undefined {
  try {
    parseSwarmConfig(["model:", "  kind: vllm", "  model: Qwen/Qwen2.5-0.5B-Instruct", ...modelYaml].join("\n"), { file: "swarm.yaml" });
    return undefined;
  } catch (error) {
    if (error instanceof SwarmConfigError) return error;
    throw error;
  }
}

describe("vLLM's --max-lora-rank", () => {
  it("is the configured rank rounded up to the ranks vLLM accepts", () => {
    expect(vllmLoraRanks).toEqual([1, 8, 16, 32, 64, 128, 256, 320, 512]);
    expect([1, 2, 8, 9, 12, 16, 17, 100, 300, 320, 321, 512].map(maxLoraRankFor)).toEqual([1, 8, 8, 16, 16, 16, 32, 128, 320, 320, 512, 512]);
    expect(maxLoraRankFor(513)).toBeUndefined();
    expect(flagValue(argvOf({ lora: { rank: 12 } }), "--max-lora-rank")).toBe("16");
    expect(flagValue(argvOf({ lora: { rank: 12 }, inference: { server: "reference" } }), "--max-lora-rank")).toBe("16");
  });

  it("refuses a rank above vLLM's largest at config time, naming the field", () => {
    const error = checkError(["  lora: { rank: 1024 }"]);
    expect(error?.field).toBe("model.lora.rank");
    expect(error?.message).toMatch(/up to 512.*set model.lora.rank to at most that/);
  });

  it("keeps {lora_rank} the configured rank for custom commands, {max_lora_rank} the rounded one", () => {
    const argv = argvOf({
      lora: { rank: 12 },
      inference: { command: ["serve", "--rank", "{lora_rank}", "--max", "{max_lora_rank}", "--loras", "{max_loras}"] },
    });
    expect(argv.slice(-6)).toEqual(["--rank", "12", "--max", "16", "--loras", "2"]);
  });
});

describe("vllm serve's arguments", () => {
  it("hold two adapters, take no sampling defaults from the model and report the sampled distribution's log-probs", () => {
    const argv = argvOf({});
    // Run under a3r's watchdog: vllm serve does not watch its parent.
    expect(argv.slice(1, 5)).toEqual(["-m", "a3r_swarm.watchdog", "--", "vllm"]);
    expect(flagValue(argv, "--max-loras")).toBe("2");
    expect(flagValue(argv, "--generation-config")).toBe("vllm");
    expect(flagValue(argv, "--logprobs-mode")).toBe("processed_logprobs");
    expect(flagValue(argv, "--enable-lora")).toBe("--max-lora-rank");
  });

  it("are the same for a3r's reference server, which speaks vLLM's flags", () => {
    const argv = argvOf({ inference: { server: "reference" } });
    expect(argv.slice(1, 3)).toEqual(["-m", "a3r_swarm.server"]);
    expect(flagValue(argv, "--max-loras")).toBe("2");
    expect(flagValue(argv, "--generation-config")).toBe("vllm");
    expect(flagValue(argv, "--logprobs-mode")).toBe("processed_logprobs");
  });

  it.each([
    [["--generation-config", "auto"], /--generation-config auto: .*generation_config.json.*remove it/],
    [["--generation-config=/models/qwen"], /--generation-config \/models\/qwen: /],
    [["--override-generation-config", '{"top_k": 20}'], /--override-generation-config .*set sampling.temperature/],
    [["--logprobs-mode", "raw_logprobs"], /--logprobs-mode raw_logprobs: .*processed_logprobs/],
    [["--max-loras", "1"], /--max-loras 1: .*at least 2/],
    [["--max-lora-rank", "64"], /--max-lora-rank 64: .*set model.lora.rank/],
  ])("refuses extra_args %j at config time, naming the field and what to set", (args, message) => {
    const error = checkError([`  inference: { extra_args: ${JSON.stringify(args)} }`]);
    expect(error?.field).toBe("model.inference.extra_args.0");
    expect(error?.message).toMatch(message);
  });

  it.each(["top_k: 20", "repetition_penalty: 1.05", "min_p: 0.1", "presence_penalty: 0.5"])(
    "refuses sampling.%s in swarm.yaml, naming the field and the keys it takes",
    (setting) => {
      const error = checkError([`sampling: { temperature: 1, ${setting} }`]);
      expect(error?.field).toBe(`sampling.${setting.split(":")[0]}`);
      expect(error?.hint).toMatch(/allowed keys here: temperature, top_p, max_tokens/);
    },
  );

  it("refuses the same in a custom command, and accepts neutral extra_args", () => {
    expect(checkError(['  inference: { command: ["vllm", "serve", "{model}", "--generation-config", "auto"] }'])?.field).toBe("model.inference.command.3");
    expect(checkError(['  inference: { extra_args: ["--max-model-len", "4096", "--generation-config", "vllm", "--max-loras", "4"] }'])).toBeUndefined();
  });
});
