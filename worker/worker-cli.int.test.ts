import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { access, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { fixtureFolder } from "./__fixtures__/fixture-blueprint.ts";

/** `a3r worker run` through the real CLI: the plan without side effects, and the exit codes. */
const cli = fileURLToPath(new URL("../bin/a3r.js", import.meta.url));
let folder: Awaited<ReturnType<typeof fixtureFolder>>;
beforeAll(async () => {
  folder = await fixtureFolder();
});
afterAll(async () => {
  await folder.cleanup();
});

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], { env: { ...process.env, A3R_LLM_PROVIDER: "" } }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

describe("a3r worker run (CLI)", () => {
  it("--dry-run prints the plan and changes nothing", async () => {
    const { path, resultDir } = await folder.write({ id: "dry", command: "node trainer.mjs --steps 3 --port {port}", frontMatter: { overrides: { port: 9555 } } });
    const result = await run(["worker", "run", path, "--dry-run", "--gpus", "0,1"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("State: new: the worker would prepare and launch attempt 1.");
    expect(result.stdout).toContain("node trainer.mjs --steps 3 --port 9555");
    expect(result.stdout).toContain("CUDA_VISIBLE_DEVICES=0,1");
    expect(result.stdout).toContain("first-signal timeout 3s");
    await expect(access(resultDir)).rejects.toThrow();
  });

  it("exits 1 with one clear line for a broken blueprint, 2 for a usage error", async () => {
    const broken = join(folder.dir, "broken.md");
    await writeFile(broken, "# not a blueprint\n");
    const result = await run(["worker", "run", broken]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error \[BLUEPRINT_INVALID\]/);
    expect(result.stderr).not.toContain("    at ");
    expect((await run(["worker", "run"])).code).toBe(2);
  });

  it("runs a failing blueprint to a failed result directory and exits 1", async () => {
    const { path } = await folder.write({ id: "cli-fails", command: "node no-such-file.mjs" });
    const result = await run(["worker", "run", path, "--quiet"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("cli-fails: failed (missing module");
  });
});
