import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import type { z } from "zod";
import type { Blueprint } from "../../blueprints/index.ts";
import type { Overrides } from "../../blueprints/index.ts";
import { a3rBin, writeConfigCopy } from "./attempt-launch.ts";

const run = promisify(execFile);

/**
 * Before the first launch of a swarm run, its config with the blueprint's overrides is
 * checked the way `a3r swarm serve` loads it (`a3r swarm check`, a process: the worker does
 * not import the swarm server). An override beyond the schema (`optimizer.clip: 5`) then
 * fails the run at once with the field and its bound, instead of a server that never
 * boots and three first-signal timeouts. Returns the refusal, or null when it loads.
 */
export async function swarmConfigRefusal(
  blueprint: Blueprint,
  resultDir: string,
  overrides: Overrides,
  options: { scratch?: string; configSchema?: z.ZodType } = {},
): Promise<string | null> {
  // `--dry-run` writes nothing in the result directory: it checks a copy in a scratch folder.
  const folder = options.scratch ?? join(resultDir, "config");
  const preflight = join(folder, `preflight${blueprint.config!.endsWith(".json") ? ".json" : ".yaml"}`);
  await writeConfigCopy(blueprint, resultDir, preflight, overrides, options.configSchema);
  try {
    await run(process.execPath, [a3rBin, "swarm", "check", "--config", preflight], { timeout: 60_000, maxBuffer: 1 << 20 });
    return null;
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? "").trim();
    const line = stderr.split("\n").find((text) => text.startsWith("error ")) ?? stderr.split("\n")[0] ?? (error as Error).message;
    return `the swarm config with the blueprint's overrides is refused: ${line.replace(/^error \[CONFIG_INVALID\] /, "")}`;
  }
}
