import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { median } from "./stats.ts";
import type { Benchmark, BenchRow } from "./report.ts";

/**
 * How long an `a3r` process takes to start and answer, for the two commands every run
 * starts most (a worker validates its blueprint and, with `--dry-run`, plans its launch):
 * from the start-up bundle (bin/bundle.mjs) against the same command through the module
 * hooks (`A3R_NO_BUNDLE=1`, how every start ran before the bundle), each the median wall
 * time of several starts taken in turn, and `node -e 0` as the floor. The bundle is built
 * once before timing (a warm cache, as after the first start of a checkout).
 */
const repeats = Number(process.env.A3R_BENCH_STARTS ?? 7);
const root = join(import.meta.dirname, "..");
const a3r = join(root, "bin", "a3r.js");
const blueprint = join(root, "examples", "blueprints", "classic-demo.md");

const commands: { name: string; args: string[] }[] = [
  { name: "a3r blueprint validate", args: ["blueprint", "validate", blueprint] },
  { name: "a3r worker run --dry-run", args: ["worker", "run", blueprint, "--dry-run"] },
];

function startMs(args: string[], environment: NodeJS.ProcessEnv): number {
  const started = performance.now();
  const result = spawnSync(process.execPath, args, { cwd: root, env: environment, encoding: "utf8" });
  const elapsed = performance.now() - started;
  if (result.status !== 0) throw new Error(`${args.join(" ")} exited ${result.status}: ${result.stderr.slice(0, 400)}`);
  return elapsed;
}

const benchmark: Benchmark = {
  title: "Start-up of an a3r process (bundle vs module hooks)",
  async run() {
    const bundled = { ...process.env };
    delete bundled.A3R_NO_BUNDLE;
    const hooked = { ...process.env, A3R_NO_BUNDLE: "1" };
    // Warm both paths: the bundle's cache and the hooks' transpile cache.
    for (const command of commands) {
      startMs([a3r, ...command.args], bundled);
      startMs([a3r, ...command.args], hooked);
    }
    const floor = median(Array.from({ length: repeats }, () => startMs(["-e", "0"], process.env)));
    const rows: BenchRow[] = [{ name: "node -e 0 (the floor)", value: floor, unit: "ms" }];
    for (const command of commands) {
      const times = { bundle: [] as number[], hooks: [] as number[] };
      // Interleaved, so a change in the machine's load falls on both alike.
      for (let index = 0; index < repeats; index += 1) {
        times.bundle.push(startMs([a3r, ...command.args], bundled));
        times.hooks.push(startMs([a3r, ...command.args], hooked));
      }
      const bundle = median(times.bundle);
      const hooks = median(times.hooks);
      rows.push(
        { name: `${command.name}: bundle`, value: bundle, unit: "ms" },
        { name: `${command.name}: module hooks`, value: hooks, unit: "ms" },
        { name: `${command.name}: bundle / hooks`, value: bundle / hooks },
      );
    }
    return {
      title: benchmark.title,
      rows,
      notes: [
        `median of ${repeats} starts each, taken in turn; the bundle's cache warm`,
        "the hooks path already loads only the command's group (cli/main.ts), which halved these starts before the bundle; the bundle's share comes on top",
      ],
    };
  },
};

export default benchmark;
