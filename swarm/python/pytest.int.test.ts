import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The Python side's own tests (trainer, reference server, tiny model, client SDK against a
 * real `a3r swarm serve`, the count-on example: `tests/`), run by
 * pytest from Debian's python3-pytest inside the integration pool, so they share the two
 * cores with the rest instead of waiting for them. Skipped, saying why, without torch.
 */
// Two halves at once: the client SDK's tests (they start `a3r swarm serve`) and the torch
// side's, so the longer one sets the time, not their sum.
const clientFiles = ["tests/test_swarm_client.py", "tests/test_example_count_on.py", "tests/test_watchdog.py"];
const halves: [string, string[]][] = [
  ["the client SDK, the count-on example and the watchdog", clientFiles],
  ["the trainer, the reference server and the tiny model", ["tests", ...clientFiles.map((file) => `--ignore=${file}`)]],
];

describe.concurrent("swarm/python (pytest)", () => {
  for (const [name, args] of halves) it(`passes ${name}`, async (context) => {
    const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn("bash", [join(import.meta.dirname, "run-tests.sh"), ...args], {
        // The client SDK tests start `a3r swarm serve` with the node running this test.
        // One torch thread per process: beside the other forks on a 2-core machine, torch's
        // default (a thread per core) waited on descheduled threads at every op, which took
        // the torch half from about 60 s to 110 s and more CPU (measured beside 3 busy loops).
        env: { ...process.env, A3R_NODE: process.env.A3R_NODE ?? process.execPath, OMP_NUM_THREADS: process.env.OMP_NUM_THREADS ?? "1" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
      child.once("exit", (code) => resolve({ code, output }));
    });
    if (/^swarm\/python: skipped/m.test(result.output)) context.skip(result.output.trim());
    expect(result.code, result.output.slice(-6000)).toBe(0);
    expect(result.output).toMatch(/\d+ passed/);
    // The slow tier (A3R_SLOW_TESTS=1) adds the transformers tests: the GPU check's CPU runs take minutes.
  }, process.env.A3R_SLOW_TESTS === "1" ? 2_400_000 : 300_000);
});
