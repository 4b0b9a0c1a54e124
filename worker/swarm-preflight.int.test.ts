import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runA3r } from "../test-support/run-cli.ts";
import { classifyFailure } from "./rules/failure-classifier.ts";
import { decideRecovery } from "./rules/recovery-playbook.ts";

const root = resolve(import.meta.dirname, "..");

/**
 * An override beyond the swarm config's schema (`optimizer.clip: 5`, maximum 1) fails the
 * run before anything is launched, naming the field and the bound (and `--dry-run` says
 * so), instead of a server that never boots and first-signal timeouts over minutes.
 */
describe("swarm config preflight", () => {
  let dir: string;
  let blueprint: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-preflight-"));
    blueprint = join(dir, "bad-clip.md");
    const example = await readFile(join(root, "examples/blueprints/swarm-demo.md"), "utf8");
    await writeFile(
      blueprint,
      example
        .replace("overrides: { lr: 0.2 }", 'overrides: { lr: 0.2, "optimizer.clip": 5 }')
        .replace("`../..`", `\`${root}\``)
        .replace("`./swarm-demo.swarm.yaml`", `\`${join(root, "examples/blueprints/swarm-demo.swarm.yaml")}\``),
    );
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("refuses the run at preparation with the field and bound; --dry-run shows it and writes nothing", async () => {
    const dry = await runA3r(["worker", "run", blueprint, "--result-dir", join(dir, "dry"), "--dry-run"]);
    expect(dry.stdout).toMatch(/REFUSED .*"optimizer\.clip".*<=1/);
    expect(await readdir(dir)).not.toContain("dry");

    const result = await runA3r(["worker", "run", blueprint, "--result-dir", join(dir, "run"), "--no-llm", "--quiet"], { timeoutMs: 60_000 });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/failed \(preparation failed: the swarm config with the blueprint's overrides is refused: .*"optimizer\.clip".*<=1\)/);
    const status = JSON.parse(await readFile(join(dir, "run", "status.json"), "utf8")) as { state: string; attempt: number };
    expect(status).toMatchObject({ state: "failed", attempt: 0 });
  });

  it("classifies a server that refused its config at boot as a configuration error: fail at once, no retry", () => {
    const logTail = 'error [CONFIG_INVALID] /r/config/attempt-1.yaml:11: invalid value for "optimizer.clip": Too big: expected number to be <=1\n';
    const classification = classifyFailure({ logTail, exitCode: 1, signal: null });
    expect(classification).toMatchObject({ failureClass: "config_invalid" });
    expect(classification.evidence).toMatch(/optimizer\.clip.*<=1/);
    expect(decideRecovery({ classification, attemptsOfClass: 0, overrides: {}, hasCheckpoint: false })).toMatchObject({ kind: "fail" });
  });
});
