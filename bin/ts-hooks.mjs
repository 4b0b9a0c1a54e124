// Module hooks that run a3r's TypeScript sources on Node 20 without a build step: each .ts
// file is transpiled by esbuild once and kept in node_modules/.cache/a3r-ts, keyed by a
// hash of its text, so a start with a warm cache reads JavaScript and loads no compiler
// (tsx's loader costs about 0.15 s per process; every `a3r` command and every spawned
// worker pays it). Types are erased, nothing is checked: `npm run typecheck` does that.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const cacheDirectory = fileURLToPath(new URL("../node_modules/.cache/a3r-ts/", import.meta.url));
// Bump when the transform's options change, so old cache entries are never reused.
const transformVersion = "1";
let esbuild;

export async function load(url, context, nextLoad) {
  if (!url.startsWith("file:") || !(url.endsWith(".ts") || url.endsWith(".mts"))) return nextLoad(url, context);
  const path = fileURLToPath(url);
  const source = readFileSync(path, "utf8");
  const key = createHash("sha1").update(transformVersion).update("\0").update(path).update("\0").update(source).digest("hex");
  const cached = `${cacheDirectory}${key}.mjs`;
  try {
    return { format: "module", source: readFileSync(cached, "utf8"), shortCircuit: true };
  } catch {
    // Not cached yet: transpile below.
  }
  esbuild ??= await import("esbuild");
  const { code } = await esbuild.transform(source, { loader: "ts", format: "esm", target: "node20", sourcemap: "inline", sourcefile: path });
  try {
    mkdirSync(cacheDirectory, { recursive: true });
    const temporary = `${cached}.${process.pid}.tmp`;
    writeFileSync(temporary, code);
    renameSync(temporary, cached);
  } catch {
    // A read-only checkout still runs, just without the cache.
  }
  return { format: "module", source: code, shortCircuit: true };
}
