import { createServer } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { VllmEngineConfig } from "./vllm-config.ts";
import { EngineError } from "../port/engine-error.ts";
import { UpstreamHttp } from "../openai-compatible/upstream-http.ts";
import { fillTemplate, referenceServerTemplate, vllmServeTemplate } from "./command-template.ts";
import { ManagedProcess } from "./managed-process.ts";
import { pythonEnvironment } from "./python-path.ts";
import { maxLoraRankFor, maxLoras } from "./vllm-arguments.ts";

export const servedModelName = "a3r-base";

/**
 * The inference server the vllm engine owns (`vllm serve`, or a3r's reference server):
 * started on a free port in its own process group with its log under
 * `<experimentDir>/logs/`, ready once `/health` and `/v1/models` answer, stopped with the
 * engine. A server that exits before it is ready fails the start with its own last error
 * line (port taken, CUDA out of memory, model not found, vllm missing), not with a time-out.
 *
 * Restarting after a crash is `restart()`; the engine decides when (vllm-engine.ts).
 */
export class InferenceServer {
  private process: ManagedProcess | undefined;
  private port = 0;
  private starts = 0;
  private readonly http = new UpstreamHttp({});

  constructor(private readonly config: VllmEngineConfig) {}

  get baseUrl(): string {
    return `http://${this.config.inference.host}:${this.port}/v1`;
  }

  get running(): boolean {
    return this.process?.running === true;
  }

  /** Resolves when the current process exits (for the engine's crash watch). */
  get exited(): Promise<number | string> | undefined {
    return this.process?.exited;
  }

  async start(): Promise<void> {
    // A port picked free can be taken by someone else before the server binds it: with
    // `port: 0`, such a start is tried again on another port (twice at most).
    for (let attempt = 1; ; attempt++) {
      try {
        await this.startOnce();
        return;
      } catch (error) {
        const taken = error instanceof EngineError && /address already in use/i.test(error.message);
        if (!taken || this.config.inference.port !== 0 || attempt >= 3) throw error;
      }
    }
  }

  private async startOnce(): Promise<void> {
    const { inference } = this.config;
    this.port = inference.port === 0 ? await freePort(inference.host) : inference.port;
    this.starts += 1;
    const argv = inferenceArgv(this.config, this.port);
    const env = {
      ...pythonEnvironment(process.env),
      // Without it vLLM refuses /v1/load_lora_adapter.
      VLLM_ALLOW_RUNTIME_LORA_UPDATING: "True",
      // The reference server stops itself when this process is gone (swarm/python/a3r_swarm/parent_watch.py).
      A3R_PARENT_PID: String(process.pid),
      ...(inference.gpus ? { CUDA_VISIBLE_DEVICES: inference.gpus.join(",") } : {}),
      ...inference.env,
    };
    const logFile = join(this.config.experiment_dir, "logs", "inference-server.log");
    const child = await ManagedProcess.start(argv, { env, logFile });
    this.process = child;
    await this.waitReady(child, logFile);
  }

  /** Stops a live process (if any) and starts a fresh one. */
  async restart(): Promise<void> {
    await this.process?.stop();
    await this.start();
  }

  async stop(): Promise<void> {
    await this.process?.stop();
    this.http.close();
  }

  /** For fault tests: kill the server's group as the OOM killer would. */
  kill(): void {
    this.process?.kill();
  }

  get pid(): number | undefined {
    return this.process?.pid;
  }

  get startCount(): number {
    return this.starts;
  }

  private async waitReady(child: ManagedProcess, logFile: string): Promise<void> {
    const deadline = Date.now() + this.config.inference.start_timeout_ms;
    let delay = 100;
    while (Date.now() < deadline) {
      if (!child.running) {
        const line = child.failureLine();
        throw new EngineError(
          "ENGINE_UPSTREAM_UNAVAILABLE",
          `the inference server exited before it was ready: ${line}`,
          /chat.?template/i.test(line)
            ? `model.model (${this.config.model}) cannot serve chat: add a chat_template to its tokenizer_config.json (or a chat_template.jinja), or use an -Instruct model`
            : `see ${logFile}; check model.model, the port, free GPU memory, and that ${this.config.inference.server === "vllm" ? "vllm is installed (pip install vllm)" : "the python has torch"}`,
        );
      }
      if ((await this.answers("/health")) && (await this.answers("/v1/models"))) return;
      await Promise.race([sleep(delay), child.exited]);
      delay = Math.min(delay * 2, 2_000);
    }
    await child.stop();
    throw new EngineError(
      "ENGINE_UPSTREAM_UNAVAILABLE",
      `the inference server was not ready within ${Math.round(this.config.inference.start_timeout_ms / 1000)} s (last line: ${child.failureLine()})`,
      `see ${logFile}; raise model.inference.start_timeout_ms for a large model`,
    );
  }

  private async answers(path: string): Promise<boolean> {
    try {
      const response = await this.http.request("GET", new URL(`http://${this.config.inference.host}:${this.port}${path}`));
      await response.text();
      return response.ok;
    } catch {
      return false;
    }
  }
}

/**
 * The inference server's argv for `port`: the template (`inference.command`, or the one
 * for `inference.server`) filled in, then `extra_args`. a3r's reference server watches its
 * parent itself; `vllm serve` (or any other command) does not, and would keep its GPU
 * memory after a SIGKILL of this process, so it runs under a3r's watchdog.
 */
export function inferenceArgv(config: VllmEngineConfig, port: number): string[] {
  const { inference } = config;
  const template = inference.command ?? (inference.server === "reference" ? referenceServerTemplate : vllmServeTemplate);
  const command = [
    ...fillTemplate(
      template,
      {
        model: config.model,
        host: inference.host,
        port: String(port),
        served_model_name: servedModelName,
        lora_rank: String(config.lora.rank),
        // The schema keeps lora.rank at most 512, so a rank vLLM accepts always exists.
        max_lora_rank: String(maxLoraRankFor(config.lora.rank) ?? config.lora.rank),
        max_loras: String(maxLoras),
        gpu_memory_utilization: String(inference.gpu_memory_utilization),
        seed: String(config.seed ?? 0),
        python: config.python,
      },
      "model.inference.command",
    ),
    ...inference.extra_args,
  ];
  return template === referenceServerTemplate ? command : [config.python, "-m", "a3r_swarm.watchdog", "--", ...command];
}

/** A port nobody listens on right now (the server binds it a moment later). */
export async function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}
