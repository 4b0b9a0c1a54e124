import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { SwarmClient } from "../client/swarm-client.ts";

/** Helpers for the swarm integration tests: real child processes, temp dirs, polling. */

const cli = fileURLToPath(new URL("../../bin/a3r.js", import.meta.url));

export async function temporaryDirectory(prefix: string): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), `a3r-${prefix}-`));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code when the process ends by itself or is stopped. */
  exited: Promise<number | null>;
  /** SIGTERM and wait for the exit (checkpoint on stop). */
  stop(): Promise<number | null>;
  kill(): Promise<void>;
}

/** Writes swarm.yaml into `directory` and runs `a3r swarm serve` on a free port. */
export async function startServerProcess(directory: string, configText: string, extraArguments: string[] = []): Promise<ServerProcess> {
  const configPath = join(directory, "swarm.yaml");
  await writeFile(configPath, configText);
  const child = spawn(process.execPath, [cli, "swarm", "serve", "--config", configPath, "--port", "0", ...extraArguments], {
    env: { ...process.env, A3R_LOG_LEVEL: process.env.A3R_LOG_LEVEL ?? "warn", NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not become ready:\n${output}`)), 30_000);
    const onData = (): void => {
      const match = /swarm server ready on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        child.stdout!.off("data", onData);
        resolve(match[1]!);
      }
    };
    child.stdout!.on("data", onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before it was ready:\n${output}`));
    });
  });
  return {
    url,
    child,
    output: () => output,
    exited,
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      return exited;
    },
    kill: async () => {
      if (child.exitCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

/** Polls `check` until it returns a value (not undefined) or the time runs out. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000, everyMs = 50): Promise<T> {
  const started = Date.now();
  let lastError: unknown;
  while (Date.now() - started < timeoutMs) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ""}`);
}

export function waitForState(client: SwarmClient, state: string, timeoutMs = 30_000): Promise<true> {
  return waitFor(`engine state ${state}`, async () => ((await client.status()).engine_status === state ? true : undefined), timeoutMs);
}

/** POSTs raw text (for malformed-input tests); returns status, parsed body and headers. */
export async function rawRequest(
  url: string,
  init: { method?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const response = await fetch(url, {
    method: init.method ?? "POST",
    headers: { "content-type": "application/json", ...init.headers },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { text };
  }
  return { status: response.status, body, headers: response.headers };
}
