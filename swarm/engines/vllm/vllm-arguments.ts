import type { z } from "zod";

/**
 * What a3r asks of `vllm serve` so that it samples from the policy the trainer assumes, and
 * the inference arguments it refuses because the trainer could not correct for them.
 *
 * The trainer (swarm/python, `trainer/grpo.py`) weighs every trained token by
 * `exp(logp_now - logp_sampled)` where both are log-probs of the full softmax at the sample's
 * temperature. vLLM by default (`--generation-config auto`) fills every sampling field a
 * request leaves out from the model's `generation_config.json` (Qwen2.5-Instruct: `top_k: 20`,
 * `repetition_penalty: 1.05`) and reports raw (temperature-1) log-probs. Both bias that ratio
 * and, with top_k, keep the policy from ever exploring beyond the top tokens. So a3r starts
 * vLLM with `--generation-config vllm` (vLLM's neutral defaults), `--logprobs-mode
 * processed_logprobs` (the log-probs of the distribution sampled from), and every request
 * also carries the neutral values explicitly (`neutralSamplingFields`).
 */

/** `--max-lora-rank` values vLLM accepts (vllm/config/lora.py, `MaxLoRARanks`); anything else fails its start. */
export const vllmLoraRanks: readonly number[] = [1, 8, 16, 32, 64, 128, 256, 320, 512];

/** The smallest rank vLLM accepts that holds a LoRA of `rank` (rank 12 → 16); undefined above 512. */
export function maxLoraRankFor(rank: number): number | undefined {
  return vllmLoraRanks.find((allowed) => allowed >= rank);
}

/**
 * vLLM's neutral value of each sampling field the trainer cannot correct for, sent on every
 * request (with `--generation-config vllm` they are vLLM's defaults too; sending them also
 * covers a server started by a custom `inference.command`). top_k 0 means "all tokens" in
 * vLLM ≥ 0.8 (earlier versions spelled it -1), which every vLLM with `return_token_ids`
 * (≥ 0.10.2) is.
 */
export const neutralSamplingFields: Readonly<Record<string, number>> = {
  top_k: 0,
  min_p: 0,
  repetition_penalty: 1,
  presence_penalty: 0,
  frequency_penalty: 0,
};

/** Adapters vLLM holds at once: the one serving and the new one loaded during a weight sync. */
export const maxLoras = 2;

interface InferenceArguments {
  command?: string[] | undefined;
  extra_args: string[];
}

/**
 * Refuses, at config time (swarm check and serve), inference arguments that change how the
 * server samples or what log-probs it reports in a way the trainer cannot undo, naming the
 * field and what to set. Reads `extra_args` and a custom `command` alike.
 */
export function refuseUntrainableArguments(inference: InferenceArguments, context: z.RefinementCtx): void {
  const places: Array<{ field: "extra_args" | "command"; argv: readonly string[] }> = [{ field: "extra_args", argv: inference.extra_args }];
  if (inference.command) places.push({ field: "command", argv: inference.command });
  for (const { field, argv } of places) {
    for (const { flag, value, index } of flagsOf(argv)) {
      const problem = problemWith(flag, value, field);
      if (problem) context.addIssue({ code: "custom", path: [field, index], message: `${flag}${value === undefined ? "" : ` ${value}`}: ${problem}` });
    }
  }
}

function problemWith(flag: string, value: string | undefined, field: "extra_args" | "command"): string | undefined {
  if (flag === "--generation-config" && value !== "vllm")
    return "vLLM would then take sampling defaults (top_k, min_p, repetition_penalty) from the model's generation_config.json, which the trainer cannot correct for; remove it (a3r starts vLLM with --generation-config vllm)";
  if (flag === "--override-generation-config")
    return "sampling overrides (top_k, min_p, repetition_penalty, penalties) bias the trainer's importance ratio; remove it and set sampling.temperature / sampling.top_p in swarm.yaml instead";
  if (flag === "--logprobs-mode" && value !== "processed_logprobs")
    return "the trainer compares against the log-probs of the distribution sampled from (at the sampling temperature); remove it (a3r passes --logprobs-mode processed_logprobs)";
  if (flag === "--max-loras" && value !== undefined && Number(value) < maxLoras)
    return `the old and the new adapter must both be loaded during a weight sync; remove it (a3r passes --max-loras ${maxLoras}) or set at least ${maxLoras}`;
  // A custom command places {max_lora_rank} itself; extra_args would repeat (and override) it.
  if (flag === "--max-lora-rank" && field === "extra_args")
    return "a3r sets it from model.lora.rank (rounded up to vLLM's allowed ranks); remove it and set model.lora.rank";
  return undefined;
}

/** `--flag value` and `--flag=value` pairs of an argv, with the index of the flag. */
function flagsOf(argv: readonly string[]): Array<{ flag: string; value: string | undefined; index: number }> {
  const flags: Array<{ flag: string; value: string | undefined; index: number }> = [];
  argv.forEach((part, index) => {
    if (!part.startsWith("--")) return;
    const equals = part.indexOf("=");
    if (equals > 0) flags.push({ flag: part.slice(0, equals), value: part.slice(equals + 1), index });
    else {
      const next = argv[index + 1];
      flags.push({ flag: part, value: next !== undefined && !next.startsWith("--") ? next : undefined, index });
    }
  });
  return flags;
}
