#!/usr/bin/env node
// The `a3r` command. Sources are TypeScript run through tsx's loader, so a checkout is
// runnable right after `npm ci` with no build step to forget or to go stale.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../cli/main.ts");
process.exitCode = await main(process.argv);
