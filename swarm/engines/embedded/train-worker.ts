import { parentPort } from "node:worker_threads";
import type { TrainingSample } from "../port/engine.ts";
import { grpoStep, type GrpoOptions } from "./grpo-step.ts";
import { createWordTokenizer } from "./tokenizer.ts";

/**
 * The optimizer step off the main thread. Stateless: each request carries copies of the
 * weights, Adam moments and reference (transferred, not cloned) and gets the updated
 * arrays back, so the main thread keeps serving the old weights until it swaps them in.
 */
export interface TrainRequest {
  id: number;
  batch: TrainingSample[];
  vocabulary: string[];
  featureBits: number;
  options: GrpoOptions;
  weights: Float32Array;
  adamFirst: Float32Array;
  adamSecond: Float32Array;
  adamStep: number;
  reference: Float32Array;
}

export type TrainResponse =
  | { id: number; ok: true; weights: Float32Array; adamFirst: Float32Array; adamSecond: Float32Array; adamStep: number; metrics: Record<string, number> }
  | { id: number; ok: false; error: string };

parentPort?.on("message", (request: TrainRequest) => {
  try {
    const state = { weights: request.weights, adamFirst: request.adamFirst, adamSecond: request.adamSecond, adamStep: request.adamStep };
    const tokenizer = createWordTokenizer(request.vocabulary);
    const metrics = grpoStep(request.batch, state, request.reference, request.featureBits, tokenizer, request.options);
    const response: TrainResponse = { id: request.id, ok: true, ...state, metrics };
    parentPort!.postMessage(response, [state.weights.buffer, state.adamFirst.buffer, state.adamSecond.buffer] as ArrayBuffer[]);
  } catch (error) {
    parentPort!.postMessage({
      id: request.id,
      ok: false,
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
    } satisfies TrainResponse);
  }
});
