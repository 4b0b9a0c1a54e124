import { Worker } from "node:worker_threads";
import { EngineError } from "../port/engine-error.ts";
import type { TrainRequest, TrainResponse } from "./train-worker.ts";

/** Starts the training worker lazily and matches answers to requests. */
export class TrainWorkerClient {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (value: TrainResponse & { ok: true }) => void; reject: (error: Error) => void }>();

  run(request: Omit<TrainRequest, "id">): Promise<TrainResponse & { ok: true }> {
    const worker = this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ ...request, id }, [
        request.weights.buffer,
        request.adamFirst.buffer,
        request.adamSecond.buffer,
        request.reference.buffer,
      ] as ArrayBuffer[]);
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker) await worker.terminate();
    this.failAll(new EngineError("ENGINE_CLOSED", "the engine was closed during a training step"));
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL("./train-worker-entry.js", import.meta.url));
    worker.on("message", (response: TrainResponse) => {
      const waiting = this.pending.get(response.id);
      if (!waiting) return;
      this.pending.delete(response.id);
      if (this.pending.size === 0) worker.unref();
      if (response.ok) waiting.resolve(response);
      else waiting.reject(new Error(`embedded training step failed: ${response.error}`));
    });
    worker.on("error", (error) => {
      this.worker = undefined;
      this.failAll(error);
    });
    worker.on("exit", (code) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failAll(new Error(`embedded training worker exited with code ${code}`));
    });
    // Referenced only while a step is pending: an idle worker must not keep a finished program alive.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private failAll(error: Error): void {
    for (const waiting of this.pending.values()) waiting.reject(error);
    this.pending.clear();
  }
}
