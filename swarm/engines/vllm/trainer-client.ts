import { join } from "node:path";
import { createInterface } from "node:readline";
import type { VllmEngineConfig } from "./vllm-config.ts";
import { EngineError } from "../port/engine-error.ts";
import { fillTemplate, trainerTemplate } from "./command-template.ts";
import { ManagedProcess } from "./managed-process.ts";
import { pythonEnvironment } from "./python-path.ts";

/** A typed error from the trainer (swarm/python/README.md lists the codes). */
export class TrainerError extends EngineError {
  constructor(
    readonly trainerCode: string,
    message: string,
    readonly retryable: boolean,
  ) {
    super("ENGINE_TRAINER_FAILED", `trainer ${trainerCode}: ${message}`, trainerHints[trainerCode] ?? "see logs/trainer.log in the experiment dir");
  }
}

const trainerHints: Record<string, string> = {
  OUT_OF_MEMORY: "lower model.trainer.micro_batch_tokens, or turn on model.trainer.gradient_checkpointing",
  NAN_LOSS: "lower optimizer.lr (the step was not applied)",
  TOKEN_OUT_OF_VOCAB: "the inference server and the trainer load different tokenizers: point both at the same model",
  BAD_BATCH: "the batch file is named in the message; the swarm server wrote it",
  MISSING_DEPENDENCY: "install the Python side on this machine: pip install transformers peft (see swarm/python/README.md)",
};

/** The trainer died: nothing answered the request (the engine restarts it from a checkpoint). */
export class TrainerDiedError extends EngineError {
  constructor(message: string) {
    super("ENGINE_TRAINER_FAILED", message, "see logs/trainer.log in the experiment dir");
  }
}

interface Pending {
  resolve: (value: Record<string, unknown>) => void;
  reject: (error: Error) => void;
}

/**
 * The engine's side of the trainer protocol ("a3r-trainer/1"): one long-lived Python
 * process, one JSON request per line on its stdin, one answer per line on its stdout,
 * matched by id; its stderr goes to `<experimentDir>/logs/trainer.log`. A model is loaded
 * once and stays on the GPU between steps (a fresh process per step would reload it).
 */
export class TrainerClient {
  private process: ManagedProcess | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private ready: Promise<void> | undefined;

  constructor(private readonly config: VllmEngineConfig) {}

  get pid(): number | undefined {
    return this.process?.pid;
  }

  get running(): boolean {
    return this.process?.running === true;
  }

  /** Starts the process and loads the model (the `load` request). */
  async start(): Promise<Record<string, unknown>> {
    const { trainer } = this.config;
    const argv = fillTemplate(trainer.command ?? trainerTemplate, { python: this.config.python, model: this.config.model }, "model.trainer.command");
    const env = { ...pythonEnvironment(process.env), ...(trainer.gpus ? { CUDA_VISIBLE_DEVICES: trainer.gpus.join(",") } : {}), ...trainer.env };
    const child = await ManagedProcess.start(argv, {
      env,
      logFile: join(this.config.experiment_dir, "logs", "trainer.log"),
      pipeStdin: true,
      pipeStdout: true,
    });
    this.process = child;
    this.ready = new Promise((resolve, reject) => {
      const lines = createInterface({ input: child.child.stdout! });
      lines.on("line", (line) => this.onLine(line, resolve));
      void child.exited.then((status) => {
        const error = new TrainerDiedError(`the trainer exited (${status}): ${child.failureLine()}`);
        reject(error);
        for (const waiting of this.pending.values()) waiting.reject(error);
        this.pending.clear();
      });
    });
    child.child.stdin!.on("error", () => undefined);
    await this.ready;
    const { optimizer, lora } = this.config;
    return this.request({
      op: "load",
      model: this.config.model,
      device: trainer.device,
      seed: this.config.seed ?? 0,
      lora: { rank: lora.rank, alpha: lora.alpha, dropout: lora.dropout, target_modules: lora.target_modules ?? null },
      optimizer: {
        lr: optimizer.lr,
        kl_coef: optimizer.kl_coef,
        clip_low: optimizer.clip,
        clip_high: optimizer.clip,
        weight_decay: trainer.weight_decay,
        max_grad_norm: trainer.max_grad_norm,
      },
      micro_batch_tokens: trainer.micro_batch_tokens,
      gradient_checkpointing: trainer.gradient_checkpointing,
    });
  }

  request(body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const child = this.process;
    if (!child?.running) return Promise.reject(new TrainerDiedError("the trainer is not running"));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      child.child.stdin!.write(`${JSON.stringify({ id, ...body })}\n`);
    });
  }

  async stop(): Promise<void> {
    const child = this.process;
    if (!child?.running) return;
    // A polite shutdown first (it flushes nothing we need, but exits cleanly); then the group.
    child.child.stdin!.end(`${JSON.stringify({ id: this.nextId++, op: "shutdown" })}\n`);
    await Promise.race([child.exited, new Promise((resolve) => setTimeout(resolve, 3_000).unref())]);
    await child.stop(2_000);
  }

  kill(): void {
    this.process?.kill();
  }

  private onLine(line: string, ready: () => void): void {
    let message: {
      id?: number;
      ok?: boolean;
      event?: string;
      result?: Record<string, unknown>;
      error?: { code?: string; message?: string; retryable?: boolean };
    };
    try {
      message = JSON.parse(line);
    } catch {
      this.process?.record(Buffer.from(`(stdout) ${line}\n`));
      return;
    }
    if (message.event === "ready") {
      ready();
      return;
    }
    const waiting = message.id === undefined ? undefined : this.pending.get(message.id);
    if (!waiting) return;
    this.pending.delete(message.id!);
    if (message.ok) waiting.resolve(message.result ?? {});
    else waiting.reject(new TrainerError(message.error?.code ?? "INTERNAL", message.error?.message ?? "no message", message.error?.retryable === true));
  }
}
