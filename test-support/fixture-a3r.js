#!/usr/bin/env node
// A stand-in for `a3r` in tests and benches: answers `worker run <blueprint> --result-dir DIR`
// like the real worker does, without training anything (see fixture-worker.ts).
import { register } from "tsx/esm/api";

register();
const { runFixtureWorker } = await import("./fixture-worker.ts");
process.exitCode = await runFixtureWorker(process.argv.slice(2));
