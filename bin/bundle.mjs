// The CLI as one esbuild bundle, built on first start and cached in
// node_modules/.cache/a3r-bundle/<entry>/<key>/, keyed by a hash of every source file it holds
// and of the checkout's real path.
//
// Why: loading a3r's TypeScript through module hooks (bin/ts-hooks.mjs) sends every import
// of every module through Node's hooks thread, about 0.5 s of CPU per process before a
// command does anything; a worker, a swarm server and every client of every run pays it.
// A bundle is plain JavaScript in a few files, loaded without hooks (about 0.1 s).
//
// - Commands stay lazy: the bundle is split at each dynamic import (cli/main.ts loads a
//   command group only when its command runs), so `a3r worker run` loads no leader code.
// - Sources are inlined, and so are the small pure-JavaScript packages every start loads
//   (`bundledPackages`: zod alone is 95 files); the others (native code, files read at run
//   time, worker threads, the leader's heavy ones) stay in node_modules, loaded as before.
// - `import.meta.url`, `.dirname` and `.filename` keep naming each source file, so paths
//   a module finds beside itself (skills, bin/a3r.js, the Python package) are unchanged.
//   Those are absolute paths, so the key holds the checkout's real path too: a checkout
//   that was moved, or copied from one since removed, builds a bundle of its own instead
//   of running one that names the old place.
// - Fresh by content: a start reads the files the last bundle was built from and compares
//   their hash with the bundle's key; any change (or a missing file, or another checkout
//   path) builds a new bundle.
//   Concurrent starts may each build one; each writes its own folder and renames it in.
// - Any failure to build or write (a read-only checkout) falls back to the hooks.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const checkoutRoot = fileURLToPath(new URL("..", import.meta.url));
// Bump when the build's options change, so an old bundle is never reused.
const bundleVersion = "2";
/** Packages inlined into the bundle, with everything they import. */
const bundledPackages = new Set(["zod", "commander", "yaml", "gray-matter", "openai"]);
/** Bundles not current for this long are removed when a new one is built (a leader may run for days from one). */
const keepOldBundlesMs = 7 * 24 * 3600 * 1000;

/**
 * The URL of the bundle's entry (for the CLI it exports `main`), or undefined when none
 * can be had. `root` and `entry` are the checkout and cli/main.ts unless a test names others.
 */
export async function bundledEntry({ root = checkoutRoot, entry = "cli/main.ts" } = {}) {
  if (process.env.A3R_NO_BUNDLE === "1") return undefined;
  // One cache per entry (the CLI, the tests' stand-in worker), each with its own key.
  const cacheRoot = join(root, "node_modules", ".cache", "a3r-bundle", entry.replace(/\.[^.]+$/, "").replaceAll(/[^a-zA-Z0-9]+/g, "-"));
  const paths = { root, entry, cacheRoot, manifestFile: join(cacheRoot, "current.json") };
  const current = readManifest(paths.manifestFile);
  const mainOf = (key) => join(cacheRoot, key, "main.js");
  if (current && keyOf(root, current.inputs) === current.key && existsSync(mainOf(current.key))) return pathToFileURL(mainOf(current.key)).href;
  try {
    return pathToFileURL(mainOf(await build(paths))).href;
  } catch {
    return undefined;
  }
}

function readManifest(manifestFile) {
  try {
    const manifest = JSON.parse(readFileSync(manifestFile, "utf8"));
    return typeof manifest.key === "string" && Array.isArray(manifest.inputs) ? manifest : undefined;
  } catch {
    return undefined;
  }
}

/** Hash of the checkout's real path and the named files' contents; undefined when one cannot be read (deleted, renamed). */
function keyOf(root, inputs) {
  try {
    const entries = inputs.map((input) => [input, readFileSync(join(root, input))]);
    return hashOf(root, entries);
  } catch {
    return undefined;
  }
}

// The real path, as esbuild resolves the paths it writes into the bundle (symbolic links followed).
function hashOf(root, entries) {
  const hash = createHash("sha1").update(`${bundleVersion}\0${realpathSync(root)}`);
  for (const [name, content] of entries) hash.update(`\0${name}\0`).update(content);
  return hash.digest("hex").slice(0, 16);
}

async function build({ root, entry, cacheRoot, manifestFile }) {
  const esbuild = await import("esbuild");
  // The exact text bundled, per file: the key is computed from it, not from a second read.
  const contents = new Map();
  const sources = {
    name: "a3r-sources",
    setup(builder) {
      builder.onResolve({ filter: /^[^./]/ }, (args) => {
        if (args.path.startsWith("node:")) return { external: true };
        // Inside an inlined package: its own imports come along.
        if (args.importer.split(sep).includes("node_modules")) return undefined;
        const name = args.path.startsWith("@") ? args.path.split("/").slice(0, 2).join("/") : args.path.split("/")[0];
        return bundledPackages.has(name) ? undefined : { external: true };
      });
      builder.onLoad({ filter: /\.(ts|mts|js|mjs)$/ }, (args) => {
        if (args.path.split(sep).includes("node_modules")) return undefined;
        const bytes = readFileSync(args.path);
        contents.set(relative(root, args.path), bytes);
        const text = bytes.toString("utf8");
        const here = JSON.stringify(pathToFileURL(args.path).href);
        const code = text
          .replaceAll("import.meta.url", here)
          .replaceAll("import.meta.dirname", JSON.stringify(dirname(args.path)))
          .replaceAll("import.meta.filename", JSON.stringify(args.path));
        return { contents: code, loader: /\.m?ts$/.test(args.path) ? "ts" : "js" };
      });
    },
  };
  mkdirSync(cacheRoot, { recursive: true });
  const staging = join(cacheRoot, `.build-${process.pid}-${Date.now()}`);
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: { main: entry },
    outdir: staging,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    // CommonJS packages inlined into ESM still call require() for Node's own modules.
    banner: { js: 'import { createRequire as a3rCreateRequire } from "node:module"; const require = a3rCreateRequire(import.meta.url);' },
    sourcemap: "linked",
    logLevel: "silent",
    plugins: [sources],
  });
  const inputs = [...contents.keys()].sort();
  const key = keyOf(root, inputs);
  // A file changed while it was bundled: use the bundle this once, record nothing.
  const bundled = inputs.map((input) => [input, contents.get(input)]);
  if (key === undefined || key !== hashOf(root, bundled)) return publish(cacheRoot, staging, `unrecorded-${process.pid}-${Date.now()}`);
  publish(cacheRoot, staging, key);
  const temporary = `${manifestFile}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify({ key, inputs }));
  renameSync(temporary, manifestFile);
  pruneOld(cacheRoot, key);
  return key;
}

function publish(cacheRoot, staging, key) {
  try {
    renameSync(staging, join(cacheRoot, key));
  } catch {
    // Another start published the same key first: its bundle is the same code.
    rmSync(staging, { recursive: true, force: true });
  }
  return key;
}

function pruneOld(cacheRoot, current) {
  for (const name of readdirSync(cacheRoot)) {
    if (name === current || name === "current.json") continue;
    const path = join(cacheRoot, name);
    try {
      if (Date.now() - statSync(path).mtimeMs > keepOldBundlesMs) rmSync(path, { recursive: true, force: true });
    } catch {
      // Removed by another start meanwhile.
    }
  }
}
