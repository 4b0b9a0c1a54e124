/**
 * The engines' own error type (swarm/ imports nothing from the rest of a3r). `code` is a
 * stable string; `hint` says what to do about it.
 */
export type EngineErrorCode =
  | "ENGINE_NOT_LOADED"
  | "ENGINE_CHECKPOINT_INVALID"
  | "ENGINE_UPSTREAM_UNAVAILABLE"
  | "ENGINE_UPSTREAM_REJECTED"
  | "ENGINE_TRAINER_FAILED"
  | "ENGINE_NOT_TRAINABLE"
  /** Re-tokenizing text needs the served model's tokenizer, which the engine does not have. */
  | "ENGINE_TOKENIZER_UNAVAILABLE"
  | "ENGINE_CLOSED";

export class EngineError extends Error {
  override readonly name = "EngineError";

  constructor(
    readonly code: EngineErrorCode,
    message: string,
    readonly hint?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
