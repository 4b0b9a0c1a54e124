#!/usr/bin/env node
// The `a3r` command. Sources are TypeScript with no build step to forget or to go stale:
// a start runs the CLI from a bundle of them, built on first start and rebuilt whenever a
// source changes (bin/bundle.mjs), and falls back to transpiling each module through
// module hooks (bin/ts-hooks.mjs) when no bundle can be had.
import { register } from "node:module";
import { bundledEntry } from "./bundle.mjs";

process.setSourceMapsEnabled(true);
const registerTypeScript = () => register("./ts-hooks.mjs", import.meta.url);
const entry = await bundledEntry();
let main;
if (entry) {
  // The bundle imports TypeScript only where a user names a file (a task module): it asks
  // for the hooks then (core/typescript-import.ts).
  globalThis[Symbol.for("a3r.registerTypeScript")] = registerTypeScript;
  ({ main } = await import(entry));
} else {
  registerTypeScript();
  ({ main } = await import("../cli/main.ts"));
}
process.exitCode = await main(process.argv);
