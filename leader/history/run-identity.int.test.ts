import { execFileSync } from "node:child_process";
import { appendFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Blueprint } from "../../blueprints/index.ts";
import { runIdentity } from "./run-identity.ts";

/** A run's identity on a real git checkout: what changes it, and when there is none. */
describe("run identity", () => {
  let codebase: string;
  const git = (...args: string[]) =>
    execFileSync("git", ["-C", codebase, "-c", "user.email=t@example.invalid", "-c", "user.name=t", ...args], { stdio: "pipe" });
  const blueprint = (fields: Partial<Blueprint> = {}, frontMatter: Record<string, unknown> = {}): Blueprint =>
    ({
      id: "b",
      mode: "classic",
      codebase,
      venv: "/usr/bin/node",
      config: join(codebase, "config.json"),
      command: "node train.mjs",
      frontMatter: { seed: 1, overrides: { lr: 0.1, seed: 1 }, ...frontMatter },
      ...fields,
    }) as Blueprint;
  const keyOf = async (value: Blueprint) => {
    const result = await runIdentity(value);
    if (result.identity === null) throw new Error(result.reason);
    return result.identity.key;
  };

  beforeAll(async () => {
    codebase = await mkdtemp(join(tmpdir(), "a3r-identity-"));
    await writeFile(join(codebase, "train.mjs"), "console.log('step: 1')\n");
    await writeFile(join(codebase, "config.json"), '{"lr": 0.1}\n');
    git("init", "-q");
    git("add", ".");
    git("commit", "-qm", "one");
  });
  afterAll(async () => {
    await rm(codebase, { recursive: true, force: true });
  });

  it("is the same for the same inputs, whatever the key order, and differs by seed, override, command and config", async () => {
    const base = await keyOf(blueprint());
    expect(await keyOf(blueprint({}, { overrides: { seed: 1, lr: 0.1 } }))).toBe(base);
    expect(await keyOf(blueprint({ timeBudget: "2h" } as Partial<Blueprint>, { worker: { poll_interval: "1s" } }))).toBe(base);
    expect(await keyOf(blueprint({}, { seed: 2, overrides: { lr: 0.1, seed: 2 } }))).not.toBe(base);
    expect(await keyOf(blueprint({}, { overrides: { lr: 0.2, seed: 1 } }))).not.toBe(base);
    expect(await keyOf(blueprint({ command: "node train.mjs --fast" }))).not.toBe(base);
    await writeFile(join(codebase, "other.json"), '{"lr": 0.3}\n');
    git("add", "other.json");
    git("commit", "-qm", "two");
    const afterCommit = await keyOf(blueprint());
    expect(afterCommit).not.toBe(base);
    expect(await keyOf(blueprint({ config: join(codebase, "other.json") }))).not.toBe(afterCommit);
  });

  it("has none for uncommitted code, a folder outside git, or an unreadable config, and says why", async () => {
    await appendFile(join(codebase, "train.mjs"), "// edited\n");
    expect(await runIdentity(blueprint())).toMatchObject({ identity: null, reason: expect.stringContaining("uncommitted changes") });
    git("commit", "-qam", "three");
    expect(await runIdentity(blueprint({ config: join(codebase, "missing.json") }))).toMatchObject({
      identity: null,
      reason: expect.stringContaining("cannot be read"),
    });
    const plain = await mkdtemp(join(tmpdir(), "a3r-identity-plain-"));
    try {
      expect(await runIdentity(blueprint({ codebase: plain }))).toMatchObject({ identity: null, reason: expect.stringContaining("not a git checkout") });
    } finally {
      await rm(plain, { recursive: true, force: true });
    }
  });
});
