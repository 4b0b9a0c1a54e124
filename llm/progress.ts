/**
 * What a call in flight has done so far, for a progress line: a slow local model is not a
 * dead one, and a person should see it working. The core publishes a tick every few
 * seconds while a call waits, and the streamed tokens when the provider streams; the live
 * view (cli/views/live-view.ts) listens. Process-wide, because the leader's calls and the
 * view that shows them meet only in the CLI process.
 */
export interface LlmProgress {
  role: string;
  provider: string;
  model: string;
  /** Output tokens streamed so far; undefined when the provider does not stream. */
  outputTokens: number | undefined;
  elapsedMs: number;
  /** The call ended (answered or failed). */
  done: boolean;
}

export type LlmProgressListener = (progress: LlmProgress) => void;

const listeners = new Set<LlmProgressListener>();

/** Listens to every call's progress; returns the function that stops listening. */
export function subscribeLlmProgress(listener: LlmProgressListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function publishLlmProgress(progress: LlmProgress): void {
  for (const listener of listeners) {
    try {
      listener(progress);
    } catch {
      // A broken progress line must never fail the call it describes.
    }
  }
}

/** "llm: frame (openai tiny-qwen) 120 tokens, 45s" or "... waiting, 45s". */
export function formatLlmProgress(progress: LlmProgress): string {
  const seconds = Math.round(progress.elapsedMs / 1000);
  const what = progress.outputTokens === undefined ? "waiting" : `${progress.outputTokens} token${progress.outputTokens === 1 ? "" : "s"}`;
  return `llm: ${progress.role} (${progress.provider} ${progress.model}) ${progress.done ? "done, " : ""}${what}, ${seconds}s`;
}
