import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readdir, readFile, realpath, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundledEntry } from "./bundle.mjs";

const run = promisify(execFile);

/**
 * The start-up bundle (bin/bundle.mjs) on a project of its own: built on first use, reused
 * while its sources are unchanged, rebuilt when one changes, each module still seeing its
 * own import.meta.url; when it cannot be built, the caller is told to use the hooks.
 */
describe("the CLI's start-up bundle", () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "a3r-bundle-"));
    await mkdir(join(root, "src"));
    await writeFile(
      join(root, "src", "main.ts"),
      'import { value, here } from "./dep.ts";\nexport const main = (): { value: number; here: string } => ({ value, here });\n',
    );
    await writeFile(join(root, "src", "dep.ts"), "export const value: number = 1;\nexport const here = import.meta.url;\n");
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const bundles = async () => (await readdir(join(root, "node_modules", ".cache", "a3r-bundle", "src-main"))).filter((name) => name !== "current.json");
  const load = async (url: string) => ((await import(url)) as { main: () => { value: number; here: string } }).main();

  it("builds once, then reuses the bundle while no source changes", async () => {
    const first = (await bundledEntry({ root, entry: "src/main.ts" }))!;
    expect(first).toMatch(/a3r-bundle\/src-main\/[0-9a-f]{16}\/main\.js$/);
    const loaded = await load(first);
    expect(loaded.value).toBe(1);
    // The module's own URL, not the bundle's: paths found beside a module stay right.
    expect(loaded.here).toBe(pathToFileURL(join(root, "src", "dep.ts")).href);
    expect(await bundledEntry({ root, entry: "src/main.ts" })).toBe(first);
    expect(await bundles()).toHaveLength(1);
  });

  it("rebuilds when a source it holds changes", async () => {
    const before = (await bundledEntry({ root, entry: "src/main.ts" }))!;
    await writeFile(join(root, "src", "dep.ts"), "export const value: number = 2;\nexport const here = import.meta.url;\n");
    const after = (await bundledEntry({ root, entry: "src/main.ts" }))!;
    expect(after).not.toBe(before);
    expect((await load(after)).value).toBe(2);
  });

  it("builds again when the current bundle's folder is gone", async () => {
    const before = (await bundledEntry({ root, entry: "src/main.ts" }))!;
    await rm(dirname(fileURLToPath(before)), { recursive: true });
    const after = (await bundledEntry({ root, entry: "src/main.ts" }))!;
    // The same sources, the same key: the folder is back where it was.
    expect(after).toBe(before);
    expect(existsSync(fileURLToPath(after))).toBe(true);
  });

  it("gives nothing when the sources do not build, and when A3R_NO_BUNDLE=1", async () => {
    await writeFile(join(root, "src", "main.ts"), 'import { value } from "./gone.ts";\nexport const main = () => value;\n');
    expect(await bundledEntry({ root, entry: "src/main.ts" })).toBeUndefined();
    process.env.A3R_NO_BUNDLE = "1";
    try {
      expect(await bundledEntry()).toBeUndefined();
    } finally {
      delete process.env.A3R_NO_BUNDLE;
    }
  });

  it("runs the a3r CLI from the bundle and, with A3R_NO_BUNDLE=1, through the module hooks", async () => {
    const a3r = join(import.meta.dirname, "a3r.js");
    const bundled = await run(process.execPath, [a3r, "blueprint", "--help"]);
    const hooked = await run(process.execPath, [a3r, "blueprint", "--help"], { env: { ...process.env, A3R_NO_BUNDLE: "1" } });
    expect(bundled.stdout).toContain("validate");
    expect(hooked.stdout).toBe(bundled.stdout);
  });
});

/**
 * The bundle holds absolute paths (each module's import.meta.url), so a checkout that is
 * moved, or copied from one since removed, must build its own rather than run one that
 * names the old place (which failed every command, `a3r --version` first, with ENOENT).
 */
describe("the start-up bundle of a checkout that moves", () => {
  const checkout = resolve(import.meta.dirname, "..");
  let parent: string;
  beforeAll(async () => {
    parent = await realpath(await mkdtemp(join(tmpdir(), "a3r-moved-")));
  });
  afterAll(async () => {
    await rm(parent, { recursive: true, force: true });
  });

  /** A checkout of this one's files (no git folder, scratch folders or bundle cache), its packages linked, not copied. */
  async function copyOfCheckout(target: string): Promise<void> {
    const skipped = new Set(["node_modules", "runs", "coverage", "tmp"]);
    await cp(checkout, target, {
      recursive: true,
      filter: (source) => {
        const top = relative(checkout, source).split(sep)[0]!;
        return !top.startsWith(".") && !skipped.has(top);
      },
    });
    await mkdir(join(target, "node_modules"));
    for (const name of await readdir(join(checkout, "node_modules")))
      if (name !== ".cache") await symlink(join(checkout, "node_modules", name), join(target, "node_modules", name));
  }
  const a3r = (at: string, ...args: string[]) =>
    run(process.execPath, [join(at, "bin", "a3r.js"), ...args], { cwd: at, env: { ...process.env, A3R_NO_BUNDLE: undefined } });
  /** The text of the CLI bundle a checkout's last start recorded as current. */
  const currentBundle = async (at: string) => {
    const cache = join(at, "node_modules", ".cache", "a3r-bundle", "cli-main");
    const { key } = JSON.parse(await readFile(join(cache, "current.json"), "utf8")) as { key: string };
    return readFile(join(cache, key, "main.js"), "utf8");
  };

  it("runs a3r from a bundle of its own after a move, and in a copy whose original was removed", async () => {
    const { version } = JSON.parse(await readFile(join(checkout, "package.json"), "utf8")) as { version: string };
    const first = join(parent, "first");
    await copyOfCheckout(first);
    expect((await a3r(first, "--version")).stdout.trim()).toBe(version);
    expect(await currentBundle(first)).toContain(pathToFileURL(join(first, "cli", "main.ts")).href);

    const moved = join(parent, "moved");
    await rename(first, moved);
    expect((await a3r(moved, "--version")).stdout.trim()).toBe(version);
    const validated = await a3r(moved, "blueprint", "validate", join("examples", "blueprints", "classic-demo.md"));
    expect(validated.stdout).toContain("no findings");
    // Run from a new bundle, which names the new place only (not from the module hooks).
    const bundle = await currentBundle(moved);
    expect(bundle).toContain(pathToFileURL(join(moved, "cli", "main.ts")).href);
    expect(bundle).not.toContain(first);

    const copied = join(parent, "copied");
    await cp(moved, copied, { recursive: true });
    await rm(moved, { recursive: true });
    expect((await a3r(copied, "--version")).stdout.trim()).toBe(version);
    expect(await currentBundle(copied)).toContain(pathToFileURL(join(copied, "cli", "main.ts")).href);
  });
});
