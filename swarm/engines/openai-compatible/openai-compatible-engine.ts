import { spawn, type ChildProcess } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import type { ChatMessage, EncodedChat, Engine, GenerateRequest, GenerateResult, TrainingSample, TrainResult } from "../port/engine.ts";
import type { OpenAiCompatibleEngineConfig } from "./openai-compatible-config.ts";
import { EngineError } from "../port/engine-error.ts";
import { readCheckpointRecord, safeJson, writeBatchFile, writeCheckpointRecord } from "../port/engine-files.ts";
import { defaultVocabulary } from "../embedded/default-vocabulary.ts";
import { createWordTokenizer, endTokenId, type WordTokenizer } from "../embedded/tokenizer.ts";
import { UpstreamHttp, type UpstreamResponse } from "./upstream-http.ts";
import { chatCompletionResponseSchema, isPlainChatCompletion, lastJsonLine, tokenIdsFromLogprobs, trainerOutputSchema } from "./upstream-response.ts";

/**
 * Inference proxied to an upstream OpenAI-compatible server (vLLM, SGLang, ...), the
 * gradient step run by an external trainer command that writes a LoRA adapter, which the
 * upstream then loads. Protocol: README.md beside this file.
 *
 * Token ids come from the upstream (vLLM ≥ 0.10.2 with `return_token_ids`, or
 * `return_tokens_as_token_ids`). The engine's own word tokenizer (the embedded engine's)
 * stands in only where it is the upstream's too: with `tokenizer: word`, or once `load()`'s
 * probe saw the upstream's prompt ids equal it (a tiny model). Otherwise an answer without
 * ids fails its request, and `encodeChat` (text-level merging) refuses: re-tokenizing a real
 * model's text with 32 words would train on ids it never produced. Not part of this engine:
 * starting or stopping the upstream, the trainer's algorithm and hyperparameters (the command
 * owns them), and retries (a failed request fails the call).
 */
export class OpenAiCompatibleEngine implements Engine {
  readonly kind = "openai-compatible";
  private readonly tokenizer: WordTokenizer;
  private readonly baseUrl: string;
  /** Parsed once: generate() is the hot path of every proxied completion. */
  private readonly completionsUrl: URL;
  private readonly upstream: UpstreamHttp;
  private servedModel: string;
  private adapterPath: string | undefined;
  private globalStep = 0;
  private loadCounter = 0;
  /** Cleared once the upstream refuses vLLM's token fields (a strict OpenAI server answers 400). */
  private sendTokenFields = true;
  private trainer: ChildProcess | undefined;
  private training: Promise<unknown> = Promise.resolve();
  /** The word tokenizer is the upstream's own (configured, or seen by the probe). */
  private wordTokenizerExact: boolean;

  constructor(
    private readonly config: OpenAiCompatibleEngineConfig,
    private readonly options: OpenAiCompatibleOptions = {},
  ) {
    this.baseUrl = config.base_url.replace(/\/+$/, "");
    this.completionsUrl = new URL(`${this.baseUrl}/chat/completions`);
    this.upstream = new UpstreamHttp({ apiKey: config.api_key });
    this.servedModel = config.model;
    this.tokenizer = options.wordTokenizer ?? createWordTokenizer(defaultVocabulary);
    this.wordTokenizerExact = config.tokenizer === "word";
  }

  /** The model name requests go out with: the base model, or the adapter loaded last. */
  get model(): string {
    return this.servedModel;
  }

  /** Sends later requests as `name` (an adapter the upstream has loaded; the vllm engine's weight sync). */
  useModel(name: string): void {
    this.servedModel = name;
  }

  async load(): Promise<void> {
    const response = await this.request("GET", `${this.baseUrl}/models`);
    if (!response.ok) {
      throw new EngineError(
        "ENGINE_UPSTREAM_UNAVAILABLE",
        `GET ${this.baseUrl}/models answered ${response.status}`,
        "check model.base_url (it must end in /v1) and model.api_key",
      );
    }
    // An upstream without token ids is found out here, but only its requests fail: it may
    // serve eval episodes, which are never trained on. `tokenizer: word` needs no probe.
    if (!this.wordTokenizerExact) await this.probeTokenIds().catch(() => undefined);
  }

  /**
   * One short completion on the base model: does the upstream return prompt and completion
   * token ids (and log-probs), and are its prompt ids the word tokenizer's? Once this has seen
   * them equal, the word tokenizer may stand in for this upstream (encodeChat, missing ids).
   */
  async probeTokenIds(): Promise<TokenIdProbe> {
    const messages: ChatMessage[] = [{ role: "user", content: "Say yes." }];
    const result = await this.generate({ messages, maxTokens: 1, temperature: 1, topP: 1, seed: 0 }, { probing: true });
    const upstreamIds = result.warnings?.includes("token_ids") !== true;
    const wordIds = this.tokenizer.encodeChat(messages, { addGenerationPrompt: true }).tokenIds;
    if (upstreamIds && sameIds(result.promptTokenIds, wordIds)) this.wordTokenizerExact = true;
    return { tokenIds: upstreamIds, logprobs: result.completionLogprobs !== undefined, wordTokenizer: this.wordTokenizerExact, result };
  }

  encodeChat(messages: ChatMessage[], options?: { addGenerationPrompt?: boolean }): EncodedChat {
    if (!this.wordTokenizerExact) {
      throw new EngineError(
        "ENGINE_TOKENIZER_UNAVAILABLE",
        `re-tokenizing text needs ${this.config.model}'s own tokenizer, which a3r does not hold (it has only the word tokenizer of its tiny models)`,
        "use compare_level: token (merging by the token ids the server returned); text-level merging and limits.max_model_len need it",
      );
    }
    return this.tokenizer.encodeChat(messages, options);
  }

  async generate(request: GenerateRequest, mode: { probing?: boolean } = {}): Promise<GenerateResult> {
    const body = {
      ...this.options.requestFields,
      model: this.servedModel,
      messages: request.messages,
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      ...(request.topP !== undefined ? { top_p: request.topP } : {}),
      ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
      ...(request.stop?.length ? { stop: request.stop } : {}),
      ...(request.seed !== undefined ? { seed: request.seed } : {}),
      ...(request.tools?.length ? { tools: request.tools } : {}),
    };
    const tokenFields = { logprobs: true, return_tokens_as_token_ids: true, return_token_ids: true };
    let response = await this.request("POST", this.completionsUrl, this.sendTokenFields ? { ...body, ...tokenFields } : body, request.signal);
    if (response.status === 400 && this.sendTokenFields) {
      const retry = await this.request("POST", this.completionsUrl, body, request.signal);
      if (retry.ok) this.sendTokenFields = false;
      response = retry.ok ? retry : response;
    }
    const text = await response.text();
    if (!response.ok) {
      throw new EngineError(
        "ENGINE_UPSTREAM_REJECTED",
        `POST ${this.baseUrl}/chat/completions answered ${response.status}: ${text.slice(0, 300)}`,
        `check the upstream's log; the model name sent was ${this.servedModel}`,
      );
    }
    const json = safeJson(text);
    // The hand check first: zod costs more per completion than the rest of this method.
    const parsed = isPlainChatCompletion(json) ? { success: true as const, data: json } : chatCompletionResponseSchema.safeParse(json);
    if (!parsed.success) {
      throw new EngineError(
        "ENGINE_UPSTREAM_REJECTED",
        `the upstream's chat completion is not OpenAI-shaped: ${parsed.error.issues[0]?.path.join(".")} ${parsed.error.issues[0]?.message}`,
        "point model.base_url at an OpenAI-compatible /v1 endpoint",
      );
    }
    const choice = parsed.data.choices[0]!;
    const content = choice.message.content ?? "";
    const finishReason = choice.finish_reason === "length" ? "length" : "stop";
    const logprobEntries = choice.logprobs?.content ?? undefined;
    const upstreamPrompt = parsed.data.prompt_token_ids ?? choice.prompt_token_ids ?? undefined;
    const upstreamCompletion = choice.token_ids ?? (logprobEntries ? tokenIdsFromLogprobs(logprobEntries) : undefined);
    if (upstreamPrompt && upstreamCompletion) {
      const logprobs = logprobEntries && logprobEntries.length === upstreamCompletion.length ? logprobEntries.map((entry) => entry.logprob) : undefined;
      return {
        text: content,
        finishReason,
        promptTokenIds: upstreamPrompt,
        completionTokenIds: upstreamCompletion,
        ...(logprobs ? { completionLogprobs: logprobs } : {}),
      };
    }
    if (!this.wordTokenizerExact && !mode.probing) {
      throw new EngineError(
        "ENGINE_UPSTREAM_REJECTED",
        `the upstream's answer has no prompt and completion token ids, and a3r will not re-tokenize ${this.config.model}'s text with another tokenizer`,
        "serve the model with vLLM ≥ 0.10.2 (return_token_ids) or another server that returns prompt_token_ids and choices[].token_ids; set model.tokenizer: word only for a3r's tiny word-vocabulary models",
      );
    }
    // Fallback where the word tokenizer is the upstream's own (tiny models): exact ids, no log-probs.
    const completionTokenIds = this.tokenizer.encodeText(content);
    if (finishReason === "stop") completionTokenIds.push(endTokenId);
    return {
      text: content,
      finishReason,
      promptTokenIds: this.tokenizer.encodeChat(request.messages, { addGenerationPrompt: true }).tokenIds,
      completionTokenIds,
      warnings: ["token_ids"],
    };
  }

  train(batch: TrainingSample[], step: number): Promise<TrainResult> {
    const run = this.training.then(() => this.trainNow(batch, step));
    this.training = run.catch(() => undefined);
    return run;
  }

  private async trainNow(batch: TrainingSample[], step: number): Promise<TrainResult> {
    const command = this.config.trainer_command;
    if (!command) {
      throw new EngineError(
        "ENGINE_NOT_TRAINABLE",
        "the openai-compatible engine has no trainer_command",
        "set model.trainer_command in the swarm config (see swarm/engines/openai-compatible/README.md)",
      );
    }
    const started = performance.now();
    const outputDirectory = join(this.config.experiment_dir, "adapters", `step-${step}`);
    await mkdir(outputDirectory, { recursive: true });
    const batchFile = await writeBatchFile(this.config.experiment_dir, step, batch);
    const stdout = await this.runTrainer(command, { A3R_BATCH_FILE: batchFile, A3R_STEP: String(step), A3R_OUTPUT_DIR: outputDirectory });
    const output = trainerOutputSchema.safeParse(lastJsonLine(stdout));
    if (!output.success) {
      throw new EngineError(
        "ENGINE_TRAINER_FAILED",
        `the trainer's last JSON line on stdout lacks ${output.error.issues[0]?.path.join(".") || "a JSON object"}`,
        'print {"adapter_path": "...", "metrics": {...}} as the last line of stdout',
      );
    }
    await this.loadAdapter(`a3r-step-${step}`, output.data.adapter_path);
    this.globalStep = step;
    return { metrics: { ...(output.data.metrics ?? {}), step_time_ms: performance.now() - started } };
  }

  private runTrainer(command: string, env: Record<string, string>): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = spawn("sh", ["-c", command], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
      this.trainer = child;
      let stdout = "";
      let stderr = "";
      // Keep only the tail: a chatty trainer must not grow memory without bound.
      child.stdout.on("data", (chunk: Buffer) => (stdout = (stdout + chunk.toString()).slice(-1_000_000)));
      child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-20_000)));
      child.on("error", (error) =>
        reject(new EngineError("ENGINE_TRAINER_FAILED", `could not start the trainer: ${error.message}`, "check model.trainer_command", { cause: error })),
      );
      child.on("close", (code, signal) => {
        this.trainer = undefined;
        if (code === 0) resolve(stdout);
        else
          reject(
            new EngineError(
              "ENGINE_TRAINER_FAILED",
              `the trainer exited with ${code ?? signal}: ${stderr.trim().split("\n").slice(-5).join(" | ")}`,
              `run it by hand with A3R_BATCH_FILE=${env.A3R_BATCH_FILE} to see why`,
            ),
          );
      });
    });
  }

  private async loadAdapter(name: string, path: string): Promise<void> {
    const origin = new URL(this.baseUrl).origin;
    const loadPath = this.config.load_adapter_path ?? "/v1/load_lora_adapter";
    const response = await this.request("POST", `${origin}${loadPath}`, { lora_name: name, lora_path: path });
    if (!response.ok) {
      throw new EngineError(
        "ENGINE_UPSTREAM_REJECTED",
        `POST ${origin}${loadPath} for ${path} answered ${response.status}: ${(await response.text()).slice(0, 300)}`,
        "vLLM needs VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora",
      );
    }
    this.servedModel = name;
    this.adapterPath = path;
  }

  async save(directory: string, step: number): Promise<string> {
    await this.training;
    return writeCheckpointRecord(directory, step, {
      format: "a3r-openai-compatible/v1",
      step,
      model: this.config.model,
      adapterPath: this.adapterPath ?? null,
    });
  }

  async restore(path: string): Promise<number> {
    await this.training;
    const record = await readCheckpointRecord(path, checkpointSchema, "an openai-compatible");
    if (record.adapterPath) {
      // A fresh name: upstreams refuse to load a second adapter under a name already in use.
      await this.loadAdapter(`a3r-step-${record.step}-restored-${++this.loadCounter}`, record.adapterPath);
    } else {
      this.servedModel = this.config.model;
      this.adapterPath = undefined;
    }
    this.globalStep = record.step;
    return record.step;
  }

  async close(): Promise<void> {
    this.trainer?.kill("SIGTERM");
    this.upstream.close();
  }

  /** Connection failures are EngineError ENGINE_UPSTREAM_UNAVAILABLE (see upstream-http.ts). */
  private request(method: string, url: URL | string, body?: unknown, signal?: AbortSignal): Promise<UpstreamResponse> {
    return this.upstream.request(method, typeof url === "string" ? new URL(url) : url, body, signal);
  }
}

/** What the vllm engine adds to every request (its neutral sampling fields, vllm-arguments.ts). */
export interface OpenAiCompatibleOptions {
  requestFields?: Readonly<Record<string, number>>;
  /** The word tokenizer to compare with and stand in (default: the embedded engine's); a tiny model's own. */
  wordTokenizer?: WordTokenizer;
}

export interface TokenIdProbe {
  /** The upstream returned prompt and completion token ids. */
  tokenIds: boolean;
  /** ...and one log-prob per completion token. */
  logprobs: boolean;
  /** The word tokenizer is the upstream's own (encodeChat and the fallback are exact). */
  wordTokenizer: boolean;
  result: GenerateResult;
}

function sameIds(left: readonly number[], right: readonly number[]): boolean {
  return left.length === right.length && left.every((id, index) => id === right[index]);
}

const checkpointSchema = z.strictObject({
  format: z.literal("a3r-openai-compatible/v1"),
  step: z.number().int().min(0),
  model: z.string(),
  adapterPath: z.string().nullable(),
});
