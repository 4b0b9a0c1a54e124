import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

/** This checkout's `a3r` entry point, for tests that run the CLI as a person would. */
export const a3rEntry = fileURLToPath(new URL("../bin/a3r.js", import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The environment minus model keys and settings: a developer's ANTHROPIC_API_KEY must not
 * turn a test's `--planner auto` into paid model calls. Tests that want a model pass it.
 */
export function withoutModelSettings(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !/^(ANTHROPIC_API_KEY|OPENAI_API_KEY|A3R_LLM_.*)$/.test(name)));
}

/** Runs `node bin/a3r.js ...args` as a child process; a non-zero exit is a result, not a throw. */
export async function runA3r(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [a3rEntry, ...args], {
      env: { ...withoutModelSettings(process.env), NO_COLOR: "1", ...options.env },
      ...(options.cwd ? { cwd: options.cwd } : {}),
      ...(options.timeoutMs ? { timeout: options.timeoutMs } : {}),
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === "number" ? failed.code : -1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}
