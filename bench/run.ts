import { readdir } from "node:fs/promises";
import { pathToFileURL, fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import type { Benchmark, BenchReport } from "./report.ts";

/**
 * `npm run bench [filter]`: runs every bench/*.bench.ts (each default-exports a Benchmark)
 * one after the other (so they do not compete for the two cores) and prints a table each.
 */
const here = dirname(fileURLToPath(import.meta.url));
const filter = process.argv[2];

function printReport(report: BenchReport): void {
  console.log(`\n## ${report.title}`);
  const width = Math.max(...report.rows.map((row) => row.name.length), 10);
  for (const row of report.rows) {
    const value = Number.isInteger(row.value) ? String(row.value) : row.value.toFixed(3);
    const goal = row.goal ? `  goal ${row.goal}: ${row.met ? "met" : "NOT met"}` : "";
    console.log(`  ${row.name.padEnd(width)}  ${value}${row.unit ? ` ${row.unit}` : ""}${goal}`);
  }
  for (const note of report.notes ?? []) console.log(`  note: ${note}`);
}

const files = (await readdir(here)).filter((file) => file.endsWith(".bench.ts") && (!filter || file.includes(filter))).sort();
for (const file of files) {
  const module = (await import(pathToFileURL(join(here, file)).href)) as { default: Benchmark };
  const started = Date.now();
  process.stderr.write(`running ${file} ...\n`);
  printReport(await module.default.run());
  process.stderr.write(`  (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
}
