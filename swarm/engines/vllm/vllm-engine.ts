import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import type { ChatMessage, EncodedChat, Engine, GenerateRequest, GenerateResult, TrainingSample, TrainResult } from "../port/engine.ts";
import type { VllmEngineConfig } from "./vllm-config.ts";
import { EngineError } from "../port/engine-error.ts";
import { readCheckpointRecord, safeJson, writeBatchFile, writeCheckpointRecord } from "../port/engine-files.ts";
import { createWordTokenizer, type WordTokenizer } from "../embedded/tokenizer.ts";
import { OpenAiCompatibleEngine } from "../openai-compatible/openai-compatible-engine.ts";
import { UpstreamHttp } from "../openai-compatible/upstream-http.ts";
import { InferenceServer, servedModelName } from "./inference-server.ts";
import { TrainerClient, TrainerDiedError } from "./trainer-client.ts";
import { AdapterSlots } from "./adapter-slots.ts";
import { neutralSamplingFields } from "./vllm-arguments.ts";

/**
 * A real model on GPUs: the engine starts and owns an inference server (`vllm serve`, or
 * a3r's reference server where vLLM is absent) and one persistent trainer process
 * (swarm/python: transformers + PEFT, or the tiny CPU model), and keeps them alive.
 *
 * One step: the batch goes to a JSONL file; the trainer runs GRPO on it and writes a LoRA
 * adapter; the server loads it under a new name, requests switch to it, and the previous
 * adapter is unloaded so adapters never pile up in GPU memory. `train` resolves only once
 * the new adapter serves (the server stays WEIGHT_SYNCING until then).
 *
 * Crashes: a dead inference server is restarted with backoff (requests in flight fail,
 * so their episodes end as aborted) and the current adapter loaded again; a trainer that
 * dies mid-step is restarted from the last checkpoint and the step runs once more. Each
 * restart is counted in the step metrics. Details: README.md beside this file.
 *
 * Not part of it: the algorithm's hyperparameters beyond the config (the trainer owns
 * them), multi-node placement, and vLLM's own tuning (pass `inference.extra_args`).
 */
export class VllmEngine implements Engine {
  readonly kind = "vllm";
  private readonly server: InferenceServer;
  private readonly trainer: TrainerClient;
  private readonly http = new UpstreamHttp({});
  private inference: OpenAiCompatibleEngine | undefined;
  /** The adapter requests go to, and the replaced ones whose unload is still owed. */
  private readonly adapters = new AdapterSlots((path, body) => this.postToServer(path, body));
  private lastTrainerCheckpoint: string | undefined;
  private serverRestarts = 0;
  private trainerRestarts = 0;
  private closing = false;
  /** Why the engine cannot go on (the inference server could not be brought back). */
  private broken: string | undefined;
  private restarting: Promise<void> | undefined;
  private training: Promise<unknown> = Promise.resolve();
  /** The token ids the server's start probe answered with (checked against the trainer's vocabulary). */
  private probedIds: number[] = [];
  /** A tiny model's own word tokenizer (its vocabulary and hash buckets); undefined for any other model. */
  private wordTokenizer: WordTokenizer | undefined;

  constructor(private readonly config: VllmEngineConfig) {
    this.server = new InferenceServer(config);
    this.trainer = new TrainerClient(config);
  }

  async load(): Promise<void> {
    await mkdir(this.config.experiment_dir, { recursive: true });
    this.wordTokenizer = await tinyModelTokenizer(this.config.model);
    // Both load the model at once (vLLM alone can take minutes); the server's failure is
    // reported first, since it is the one the user reads about in the log.
    const [server, trainer] = await Promise.allSettled([this.startServer(), this.trainer.start()]);
    if (server.status === "rejected" || trainer.status === "rejected") {
      await this.close();
      throw server.status === "rejected" ? server.reason : (trainer as PromiseRejectedResult).reason;
    }
    const mismatch = vocabularyMismatch(this.probedIds, trainer.value.vocab_size, this.config.model);
    if (mismatch) {
      await this.close();
      throw mismatch;
    }
  }

  encodeChat(messages: ChatMessage[], options?: { addGenerationPrompt?: boolean }): EncodedChat {
    return this.delegate().encodeChat(messages, options);
  }

  generate(request: GenerateRequest): Promise<GenerateResult> {
    if (this.broken) return Promise.reject(new EngineError("ENGINE_UPSTREAM_UNAVAILABLE", this.broken, "see logs/inference-server.log in the experiment dir"));
    // While the server restarts, requests fail at once: their episodes end as aborted.
    if (!this.server.running)
      return Promise.reject(
        new EngineError("ENGINE_UPSTREAM_UNAVAILABLE", "the inference server is restarting", "the client aborts this episode and claims a new one"),
      );
    return this.delegate().generate(request);
  }

  train(batch: TrainingSample[], step: number): Promise<TrainResult> {
    const run = this.training.then(() => this.trainNow(batch, step));
    this.training = run.catch(() => undefined);
    return run;
  }

  private async trainNow(batch: TrainingSample[], step: number): Promise<TrainResult> {
    if (this.broken) throw new EngineError("ENGINE_UPSTREAM_UNAVAILABLE", this.broken, "see logs/inference-server.log in the experiment dir");
    const started = performance.now();
    const outputDirectory = join(this.config.experiment_dir, "adapters", `step-${step}`);
    const batchFile = await writeBatchFile(this.config.experiment_dir, step, batch);
    const request = { op: "train", batch_file: batchFile, step, output_dir: outputDirectory };
    let answer: Record<string, unknown>;
    try {
      answer = await this.trainer.request(request);
    } catch (error) {
      if (!(error instanceof TrainerDiedError) || this.closing) throw error;
      // Killed mid-step: back to the last checkpoint, and the step once more.
      await this.restartTrainer();
      answer = await this.trainer.request(request);
    }
    const result = trainAnswerSchema.safeParse(answer);
    if (!result.success)
      throw new EngineError(
        "ENGINE_TRAINER_FAILED",
        `the trainer's answer to step ${step} lacks ${result.error.issues[0]?.path.join(".")}`,
        "see swarm/python/README.md for the protocol",
      );
    const trained = performance.now();
    await this.serveAdapter(`a3r-step-${step}`, result.data.adapter_path);
    return {
      metrics: {
        ...result.data.metrics,
        weight_sync_ms: performance.now() - trained,
        step_time_ms: performance.now() - started,
        inference_restarts: this.serverRestarts,
        trainer_restarts: this.trainerRestarts,
        // Replaced adapters the server has not confirmed unloading (retried at the next sync).
        stale_adapters: this.adapters.staleNames.length,
      },
    };
  }

  async save(directory: string, step: number): Promise<string> {
    await this.training;
    await mkdir(directory, { recursive: true });
    const request = { op: "save", dir: join(directory, `trainer-${step}`) };
    let saved: Record<string, unknown>;
    try {
      saved = await this.trainer.request(request);
    } catch (error) {
      if (!(error instanceof TrainerDiedError) || this.closing) throw error;
      // Killed while saving: restarted from the last checkpoint, as after a death mid-step
      // (counted in trainer_restarts), then saved.
      await this.restartTrainer();
      saved = await this.trainer.request(request);
    }
    const trainerCheckpoint = z.object({ path: z.string() }).parse(saved).path;
    this.lastTrainerCheckpoint = trainerCheckpoint;
    return writeCheckpointRecord(directory, step, {
      format: "a3r-vllm/v1",
      step,
      model: this.config.model,
      trainerCheckpoint,
      adapterPath: this.adapters.current?.path ?? null,
    });
  }

  async restore(path: string): Promise<number> {
    await this.training;
    const record = await readCheckpointRecord(path, checkpointSchema, "a vllm-engine");
    const restored = z
      .object({ adapter_path: z.string().nullable().optional() })
      .parse(await this.trainer.request({ op: "restore", path: record.trainerCheckpoint }));
    this.lastTrainerCheckpoint = record.trainerCheckpoint;
    const adapterPath = restored.adapter_path ?? record.adapterPath;
    if (adapterPath) await this.serveAdapter(`a3r-step-${record.step}-restored`, adapterPath);
    return record.step;
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.allSettled([this.trainer.stop(), this.server.stop()]);
    this.inference?.close();
    this.http.close();
  }

  /** The inference server's OpenAI base URL (it changes when a restart picks a new free port). */
  get inferenceBaseUrl(): string {
    return this.server.baseUrl;
  }

  /** The processes the engine owns (for tests and for `ps`). */
  processIds(): { inference: number | undefined; trainer: number | undefined } {
    return { inference: this.server.pid, trainer: this.trainer.pid };
  }

  /** For fault tests: kill the inference server's or the trainer's process group. */
  killForTest(part: "inference" | "trainer"): void {
    if (part === "inference") this.server.kill();
    else this.trainer.kill();
  }

  private delegate(): OpenAiCompatibleEngine {
    if (!this.inference) throw new EngineError("ENGINE_NOT_LOADED", "the vllm engine is not loaded", "call load() first");
    return this.inference;
  }

  private async startServer(): Promise<void> {
    await this.server.start();
    this.inference?.close();
    // Every request carries vLLM's neutral values of the sampling fields the trainer cannot
    // correct for (vllm-arguments.ts), whatever the server's own defaults.
    this.inference = new OpenAiCompatibleEngine(
      { kind: "openai-compatible", base_url: this.server.baseUrl, model: servedModelName, experiment_dir: this.config.experiment_dir },
      { requestFields: neutralSamplingFields, ...(this.wordTokenizer ? { wordTokenizer: this.wordTokenizer } : {}) },
    );
    try {
      this.probedIds = await probeServer(this.inference, this.config.inference.server);
    } catch (error) {
      await this.server.stop();
      throw error;
    }
    const current = this.adapters.current;
    // A fresh server knows no adapter (and owes no unload): load the current one again before serving.
    this.adapters.forgetAll();
    if (current) {
      await this.serveAdapter(`${current.name.replace(/-r\d+$/, "")}-r${this.serverRestarts}`, current.path, { duringRestart: true });
    }
    this.watchServer();
  }

  private watchServer(): void {
    const exited = this.server.exited;
    void exited?.then(() => {
      if (this.closing || this.server.exited !== exited) return;
      this.restarting ??= this.restartServer().finally(() => (this.restarting = undefined));
    });
  }

  private async restartServer(): Promise<void> {
    let last = "";
    for (let attempt = 1; !this.closing; attempt++) {
      if (this.serverRestarts >= this.config.max_restarts) {
        // Given up: every request and step now fails with the reason instead of waiting.
        this.broken = `the inference server died and ${this.serverRestarts} restart(s) failed${last ? `: ${last}` : ""}`;
        return;
      }
      this.serverRestarts += 1;
      await sleep(Math.min(500 * 2 ** (attempt - 1), 30_000));
      try {
        await this.startServer();
        return;
      } catch (error) {
        // Counted; the next attempt waits longer.
        last = error instanceof Error ? error.message : String(error);
      }
    }
  }

  private async restartTrainer(): Promise<void> {
    if (this.trainerRestarts >= this.config.max_restarts)
      throw new EngineError("ENGINE_TRAINER_FAILED", `the trainer died ${this.trainerRestarts + 1} times`, "see logs/trainer.log in the experiment dir");
    this.trainerRestarts += 1;
    await this.trainer.stop();
    await this.trainer.start();
    if (this.lastTrainerCheckpoint) await this.trainer.request({ op: "restore", path: this.lastTrainerCheckpoint });
  }

  /** Serves a new adapter, through a crash and restart of the inference server if need be. */
  private async serveAdapter(baseName: string, path: string, options: { duringRestart?: boolean } = {}): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      // A step's new adapter waits for a restart in progress (the restart itself must not).
      if (this.restarting && !options.duringRestart) await this.restarting;
      try {
        await this.loadAndSwitch(baseName, path);
        return;
      } catch (error) {
        // The server died under the load request: once it is back, load there (a step
        // must not fail, and take the run offline, because the server restarted).
        const down = error instanceof EngineError && error.code === "ENGINE_UPSTREAM_UNAVAILABLE";
        if (!down || options.duringRestart || this.closing || attempt >= 3) throw error;
        await this.serverBack();
      }
    }
  }

  /** Waits until the inference server runs again after a crash (or the engine gave up on it). */
  private async serverBack(): Promise<void> {
    const deadline = Date.now() + this.config.inference.start_timeout_ms + 30_000;
    // The crash watch starts the restart once the exit is seen: give it that moment.
    await sleep(300);
    while (!this.closing && Date.now() < deadline) {
      if (this.broken) throw new EngineError("ENGINE_UPSTREAM_UNAVAILABLE", this.broken, "see logs/inference-server.log in the experiment dir");
      if (this.restarting) await this.restarting;
      else if (this.server.running) return;
      else await sleep(200);
    }
  }

  /** Loads an adapter, switches requests to it, unloads the previous one (adapter-slots.ts). */
  private async loadAndSwitch(baseName: string, path: string): Promise<void> {
    await this.adapters.load(baseName, path, (name) => this.delegate().useModel(name));
  }

  private async postToServer(path: string, body: Record<string, string>): Promise<{ status: number; text: string }> {
    const origin = new URL(this.server.baseUrl).origin;
    const answer = await this.http.request("POST", new URL(`${origin}${path}`), body);
    return { status: answer.status, text: await answer.text() };
  }
}

/**
 * The start probe: one short completion must come back with prompt and completion token ids
 * and their log-probs, or the engine cannot train on what the server samples. A server that
 * cannot answer a chat completion at all (a model without a chat template) fails here too,
 * with its own message. Returns the ids it saw.
 */
async function probeServer(inference: OpenAiCompatibleEngine, server: "vllm" | "reference"): Promise<number[]> {
  let probe: Awaited<ReturnType<OpenAiCompatibleEngine["probeTokenIds"]>>;
  try {
    probe = await inference.probeTokenIds();
  } catch (error) {
    throw new EngineError(
      "ENGINE_UPSTREAM_REJECTED",
      `the inference server could not answer a first chat completion: ${error instanceof Error ? error.message : String(error)}`,
      "a model without a chat template (chat_template in tokenizer_config.json, or chat_template.jinja) cannot serve chat: add one to model.model's folder, or use an -Instruct model",
      { cause: error },
    );
  }
  if (!probe.tokenIds || !probe.logprobs) {
    throw new EngineError(
      "ENGINE_UPSTREAM_REJECTED",
      `the inference server answered without ${probe.tokenIds ? "log-probs" : "prompt and completion token ids"} (asked with return_token_ids and logprobs)`,
      server === "vllm"
        ? "a3r needs vLLM ≥ 0.10.2 (return_token_ids, --logprobs-mode): pip install -U 'vllm>=0.10.2'"
        : "point model.inference.command at a server that returns prompt_token_ids, choices[].token_ids and logprobs, as vLLM ≥ 0.10.2 does",
    );
  }
  return [...probe.result.promptTokenIds, ...probe.result.completionTokenIds];
}

/**
 * The word tokenizer of a3r's tiny models (`a3r_swarm.tiny`: config.json format a3r-tiny/1,
 * its vocabulary and unknown-word buckets), so encodeChat gives the server's exact ids;
 * undefined for a Hugging Face id or any other folder.
 */
async function tinyModelTokenizer(model: string): Promise<WordTokenizer | undefined> {
  const text = await readFile(join(model, "config.json"), "utf8").catch(() => undefined);
  const parsed = tinyConfigSchema.safeParse(text === undefined ? undefined : safeJson(text));
  return parsed.success ? createWordTokenizer(parsed.data.vocab, { unknownBuckets: parsed.data.unknown_buckets }) : undefined;
}

const tinyConfigSchema = z.looseObject({
  format: z.literal("a3r-tiny/1"),
  vocab: z.array(z.string()),
  unknown_buckets: z.number().int().positive(),
});

/** The server tokenizes with ids the trainer's model has no embedding for: two different models. */
function vocabularyMismatch(ids: readonly number[], vocabSize: unknown, model: string): EngineError | undefined {
  if (typeof vocabSize !== "number") return undefined;
  const largest = Math.max(-1, ...ids);
  if (largest < vocabSize) return undefined;
  return new EngineError(
    "ENGINE_TRAINER_FAILED",
    `the inference server's tokenizer gave token id ${largest}, but the trainer's model has ${vocabSize} embeddings (vocab_size)`,
    `model.model (${model}) must hold one model's tokenizer and weights: rebuild it, or set vocab_size in its config.json to at least ${largest + 1}`,
  );
}

const trainAnswerSchema = z.object({
  adapter_path: z.string().min(1),
  metrics: z.record(z.string(), z.number()).default({}),
});

const checkpointSchema = z.strictObject({
  format: z.literal("a3r-vllm/v1"),
  step: z.number().int().min(0),
  model: z.string(),
  trainerCheckpoint: z.string().min(1),
  adapterPath: z.string().nullable(),
});
