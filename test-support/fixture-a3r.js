#!/usr/bin/env node
// A stand-in for `a3r` in tests and benches: answers `worker run <blueprint> --result-dir DIR`
// like the real worker does, without training anything (see fixture-worker.ts). Started as
// a bundle like the real CLI (bin/bundle.mjs), so tests that start many pay little for it.
import { bundledEntry } from "../bin/bundle.mjs";

const entry = await bundledEntry({ entry: "test-support/fixture-worker.ts" });
let runFixtureWorker;
if (entry) ({ runFixtureWorker } = await import(entry));
else {
  const { register } = await import("tsx/esm/api");
  register();
  ({ runFixtureWorker } = await import("./fixture-worker.ts"));
}
process.exitCode = await runFixtureWorker(process.argv.slice(2));
