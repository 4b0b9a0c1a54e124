import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The Python side's own tests (trainer, reference server, tiny model, client SDK against a
 * real `a3r swarm serve`, the count-on example: `tests/`), run by
 * pytest from Debian's python3-pytest inside the integration pool, so they share the two
 * cores with the rest instead of waiting for them. Skipped, saying why, without torch.
 */
describe("swarm/python (pytest)", () => {
  it("passes the trainer, server, tiny-model and client SDK tests", async (context) => {
    const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn("bash", [join(import.meta.dirname, "run-tests.sh")], {
        // The client SDK tests start `a3r swarm serve` with the node running this test.
        env: { ...process.env, A3R_NODE: process.env.A3R_NODE ?? process.execPath },
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
  }, 300_000);
});
