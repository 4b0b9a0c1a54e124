import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, rm, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
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
