#!/usr/bin/env node
// The `a3r` command. Sources are TypeScript, transpiled on first load and cached
// (bin/ts-hooks.mjs), so a checkout is runnable right after `npm ci` with no build step to
// forget or to go stale, and a warm start loads no compiler.
import { register } from "node:module";

process.setSourceMapsEnabled(true);
register("./ts-hooks.mjs", import.meta.url);
const { main } = await import("../cli/main.ts");
process.exitCode = await main(process.argv);
