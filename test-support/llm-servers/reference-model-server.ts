import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../free-port.ts";
import { venvMissing, venvPython } from "../python-venv.ts";

/**
 * a3r's own OpenAI-compatible reference server (`python -m a3r_swarm.server`) serving a
 * random-weight model, as a language-model planner's provider over real HTTP. Preferred:
 * a tiny Qwen2 with Qwen's real tokenizer and chat template, built by the venv's Python
 * (`a3r_swarm.gpu_check.qwen_model`); without the venv, the tiny word-tokenizer model
 * that Debian's python3 with torch serves. Either answers nonsense, by nature.
 */
export interface ReferenceModel {
  kind: "qwen" | "tiny";
  dir: string;
  python: string;
}

const pythonRoot = fileURLToPath(new URL("../../swarm/python/", import.meta.url));
const systemPython = "/usr/bin/python3";

/** Why no reference model can be served here, or undefined when one can. */
export function referenceModelMissing(): string | undefined {
  if (!venvMissing(["torch", "transformers"])) return undefined;
  if (!existsSync(systemPython)) return `neither ${venvPython} with transformers nor ${systemPython} with torch`;
  const probe = spawnSync(systemPython, ["-c", "import torch"], { encoding: "utf8", timeout: 120_000 });
  return probe.status === 0 ? undefined : `${systemPython} cannot import torch, and ${venvMissing(["torch", "transformers"])}`;
}

/** A3R_REFERENCE_MODEL=tiny (or qwen) picks the model where both could run, to try the other path. */
function referenceModelKind(): "qwen" | "tiny" | undefined {
  const named = process.env.A3R_REFERENCE_MODEL;
  return named === "tiny" || named === "qwen" ? named : undefined;
}

/** Builds the model into `dir` (the Qwen one where the venv has transformers, unless `kind` says). */
export function buildReferenceModel(dir: string, kind = referenceModelKind()): ReferenceModel {
  const qwen = kind === undefined ? venvMissing(["torch", "transformers"]) === undefined : kind === "qwen";
  const python = qwen ? venvPython : systemPython;
  const out = join(dir, qwen ? "qwen" : "tiny");
  // The tiny model's positions cover a planner's prompts (a few thousand words).
  const args = qwen ? ["-m", "a3r_swarm.gpu_check.qwen_model", "--out", out] : ["-m", "a3r_swarm.tiny", "init", "--out", out, "--max-context", "8192"];
  const built = spawnSync(python, args, { cwd: pythonRoot, env: pythonEnv(), encoding: "utf8", timeout: 300_000 });
  if (built.status !== 0) throw new Error(`building the ${qwen ? "qwen" : "tiny"} model failed: ${built.stderr}`);
  return { kind: qwen ? "qwen" : "tiny", dir: out, python };
}

export interface ReferenceModelServer {
  /** Up to /v1, as A3R_LLM_BASE_URL wants it. */
  baseUrl: string;
  model: string;
  close(): Promise<void>;
}

/** Starts the server on a free 127.0.0.1 port; resolves once its ready line is printed. */
export async function startReferenceModelServer(model: ReferenceModel, options: { maxModelLen?: number; name?: string } = {}): Promise<ReferenceModelServer> {
  const port = await freePort();
  const name = options.name ?? `random-${model.kind}`;
  const args = ["-m", "a3r_swarm.server", "--model", model.dir, "--port", String(port), "--served-model-name", name, "--device", "cpu"];
  if (options.maxModelLen !== undefined) args.push("--max-model-len", String(options.maxModelLen));
  const child = spawn(model.python, args, { cwd: pythonRoot, env: pythonEnv(), stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the reference server did not start in 180 s: ${stderr}`)), 180_000);
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
      if (stderr.includes("reference server ready on")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the reference server exited (${code}) before it was ready: ${stderr}`));
    });
  });
  return { baseUrl: `http://127.0.0.1:${port}/v1`, model: name, close: () => stop(child) };
}

function pythonEnv(): NodeJS.ProcessEnv {
  return { ...process.env, PYTHONPATH: pythonRoot, PYTHONUNBUFFERED: "1", OMP_NUM_THREADS: "1" };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}
