import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { renderBlueprint, type Blueprint } from "../../blueprints/index.ts";

/** The folder of the fixture programs: the codebase of every test blueprint. */
export const fixturesDir = fileURLToPath(new URL(".", import.meta.url)).replace(/\/$/, "");

/** Timing knobs that make a fault-injection case take seconds, not minutes. */
export const fastWorker = { poll_interval: "100ms", heartbeat_interval: "500ms", stall_timeout: "3s", grace_period: "300ms", lease_ttl: "2s" };

export interface FixtureBlueprintOptions {
  id: string;
  command: string;
  mode?: "classic" | "swarm";
  config?: string | null;
  budget?: string;
  codebase?: string;
  frontMatter?: Record<string, unknown>;
  worker?: Record<string, unknown>;
}

/** A temp folder with blueprints for the fixtures; `cleanup` removes it. */
export async function fixtureFolder(): Promise<{
  dir: string;
  write(options: FixtureBlueprintOptions): Promise<{ path: string; resultDir: string }>;
  cleanup(): Promise<void>;
}> {
  const dir = await mkdtemp(join(tmpdir(), "a3r-worker-"));
  return {
    dir,
    async write(options) {
      const resultDir = join(dir, "results", options.id);
      const blueprint: Blueprint = {
        id: options.id,
        mode: options.mode ?? "classic",
        purpose: `Fault injection: ${options.id}.`,
        codebase: options.codebase ?? fixturesDir,
        venv: process.execPath,
        config: options.config ?? null,
        command: options.command,
        resultDir,
        timeBudgetMs: 0,
        timeBudget: options.budget ?? "1m",
        notes: "- Written by a worker integration test.",
        frontMatter: {
          a3r: "blueprint/v1",
          id: options.id,
          mode: options.mode ?? "classic",
          first_signal_timeout: "3s",
          metric: { name: "reward_mean", goal: "maximize" },
          prediction: "reward_mean at the last step >= 0.5",
          ...options.frontMatter,
          worker: { ...fastWorker, ...options.worker },
        },
        format: "a3r",
        lines: {},
      };
      const path = join(dir, `${options.id}.md`);
      await writeFile(path, renderBlueprint(blueprint));
      return { path, resultDir };
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}
