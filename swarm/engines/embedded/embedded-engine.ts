import { join } from "node:path";
import type { ChatMessage, EncodedChat, Engine, GenerateRequest, GenerateResult, TrainingSample, TrainResult } from "../port/engine.ts";
import type { EmbeddedEngineConfig } from "./embedded-config.ts";
import { EngineError } from "../port/engine-error.ts";
import { readCheckpoint, writeCheckpoint } from "./checkpoint-files.ts";
import { defaultVocabulary } from "./default-vocabulary.ts";
import { grpoStep, type PolicyState } from "./grpo-step.ts";
import { sampleAnswer } from "./policy-sampler.ts";
import { SeededRandom } from "./seeded-random.ts";
import { createWordTokenizer, type WordTokenizer } from "./tokenizer.ts";
import { TrainWorkerClient } from "./train-worker-client.ts";

/**
 * A deliberately small policy that runs on the CPU in TypeScript: a log-linear model over
 * hashed conversation features (see policy-features.ts) that can say only the words of a
 * fixed vocabulary of a few dozen words. It is not a language model: it learns lookups and
 * two-word conjunctions, which is what the example tasks need, in seconds, so that the swarm
 * (tracking, batching, GRPO) can be tested and demonstrated end to end without a GPU.
 *
 * Sampling honours temperature (0 = greedy), top_p, max_tokens, stop strings and a per-request
 * seed; tool schemas are ignored with a warning. Training is GRPO (see grpo-step.ts) run in a
 * worker thread. Reported log-probs are under the policy at temperature 1 without top-p.
 */
export class EmbeddedEngine implements Engine {
  readonly kind = "embedded";
  private readonly tokenizer: WordTokenizer;
  private readonly featureBits: number;
  private readonly random: SeededRandom;
  private readonly trainWorker: TrainWorkerClient | undefined;
  private state: PolicyState | undefined;
  private reference: Float32Array | undefined;
  private globalStep = 0;
  private training: Promise<unknown> = Promise.resolve();

  constructor(private readonly config: EmbeddedEngineConfig) {
    this.tokenizer = createWordTokenizer(config.embedded?.vocabulary ?? defaultVocabulary);
    this.featureBits = config.embedded?.feature_bits ?? 15;
    this.random = new SeededRandom(config.seed ?? 1);
    this.trainWorker = config.embedded?.train_off_thread === false ? undefined : new TrainWorkerClient();
  }

  get vocabulary(): readonly string[] {
    return this.tokenizer.vocabulary;
  }

  get step(): number {
    return this.globalStep;
  }

  async load(): Promise<void> {
    if (this.state) return;
    const size = (1 << this.featureBits) * this.tokenizer.outputTokenIds.length;
    // Zero weights: the untrained policy is uniform over the vocabulary, and that uniform
    // policy is also the KL reference.
    this.state = { weights: new Float32Array(size), adamFirst: new Float32Array(size), adamSecond: new Float32Array(size), adamStep: 0 };
    this.reference = new Float32Array(size);
  }

  encodeChat(messages: ChatMessage[], options?: { addGenerationPrompt?: boolean }): EncodedChat {
    return this.tokenizer.encodeChat(messages, options);
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    const state = this.requireState();
    request.signal?.throwIfAborted();
    const promptTokenIds = this.tokenizer.encodeChat(request.messages, { addGenerationPrompt: true }).tokenIds;
    const random = request.seed === undefined ? this.random : new SeededRandom(request.seed);
    const answer = sampleAnswer(
      state.weights,
      this.featureBits,
      this.tokenizer,
      promptTokenIds,
      {
        temperature: request.temperature ?? 1,
        topP: request.topP ?? 1,
        maxTokens: request.maxTokens ?? 16,
        stop: request.stop ?? [],
      },
      random,
    );
    const warnings = request.tools?.length ? ["tools"] : undefined;
    return {
      text: answer.text,
      finishReason: answer.finishReason,
      promptTokenIds,
      completionTokenIds: answer.tokenIds,
      completionLogprobs: answer.logprobs,
      ...(warnings ? { warnings } : {}),
    };
  }

  train(batch: TrainingSample[], step: number): Promise<TrainResult> {
    // Steps never overlap: each starts from the weights the previous one produced.
    const run = this.training.then(() => this.trainNow(batch, step));
    this.training = run.catch(() => undefined);
    return run;
  }

  private async trainNow(batch: TrainingSample[], step: number): Promise<TrainResult> {
    const state = this.requireState();
    const reference = this.reference!;
    const { lr, kl_coef, clip } = this.config.optimizer;
    const options = { lr, klCoef: kl_coef, clip };
    const started = performance.now();
    let metrics: Record<string, number>;
    if (!this.trainWorker) {
      metrics = grpoStep(batch, state, reference, this.featureBits, this.tokenizer, options);
    } else {
      const result = await this.trainWorker.run({
        batch,
        vocabulary: [...this.tokenizer.vocabulary],
        featureBits: this.featureBits,
        options,
        weights: state.weights.slice(),
        adamFirst: state.adamFirst.slice(),
        adamSecond: state.adamSecond.slice(),
        adamStep: state.adamStep,
        reference: reference.slice(),
      });
      this.state = { weights: result.weights, adamFirst: result.adamFirst, adamSecond: result.adamSecond, adamStep: result.adamStep };
      metrics = result.metrics;
    }
    this.globalStep = step;
    return { metrics: { ...metrics, step_time_ms: performance.now() - started } };
  }

  async save(directory: string, step: number): Promise<string> {
    await this.training;
    const state = this.requireState();
    return writeCheckpoint(directory, {
      step,
      adamStep: state.adamStep,
      randomState: this.random.getState(),
      vocabulary: [...this.tokenizer.vocabulary],
      featureBits: this.featureBits,
      weights: state.weights,
      adamFirst: state.adamFirst,
      adamSecond: state.adamSecond,
      reference: this.reference!,
    });
  }

  async restore(path: string): Promise<number> {
    await this.training;
    const checkpoint = await readCheckpoint(path);
    const expected = this.tokenizer.vocabulary.join(" ");
    if (checkpoint.vocabulary.join(" ") !== expected || checkpoint.featureBits !== this.featureBits) {
      throw new EngineError(
        "ENGINE_CHECKPOINT_INVALID",
        `${join(path, "meta.json")}: vocabulary or feature_bits differ from this engine's configuration`,
        "restore with the embedded options the checkpoint was trained with",
      );
    }
    this.state = { weights: checkpoint.weights, adamFirst: checkpoint.adamFirst, adamSecond: checkpoint.adamSecond, adamStep: checkpoint.adamStep };
    this.reference = checkpoint.reference;
    this.random.setState(checkpoint.randomState);
    this.globalStep = checkpoint.step;
    return checkpoint.step;
  }

  async close(): Promise<void> {
    await this.trainWorker?.close();
  }

  private requireState(): PolicyState {
    if (!this.state) throw new EngineError("ENGINE_NOT_LOADED", "the embedded engine is not loaded", "call load() before generate/train/save");
    return this.state;
  }
}
