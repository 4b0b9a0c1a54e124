// The shape check of ARCHITECTURE.md ("Dependency rules"), run by `npm run check:layers`
// after dependency-cruiser's layering: no folder-level import cycle inside a top-level
// folder, and no production function longer than 120 lines (bin/shape-rules.mjs).
// Prints one line per finding and exits 1 if there is any.
//
//   node bin/check-shape.mjs [folder...]    (default: every source folder)
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { folderCycles, formatCycle, formatLongFunction, isProduction, longFunctions } from "./shape-rules.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const defaultFolders = ["cli", "leader", "worker", "hosts", "campaign", "llm", "blueprints", "core", "swarm", "examples", "bin"];
const sourceExtension = /\.(ts|mts|cts|mjs|js|cjs)$/;

function cruise(folders) {
  const depcruise = join(root, "node_modules", ".bin", "depcruise");
  const output = execFileSync(depcruise, ["--config", ".dependency-cruiser.cjs", "--output-type", "json", ...folders], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 512 * 1024 * 1024,
  });
  return JSON.parse(output).modules;
}

function sourceFiles(folder) {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (entry.name !== "node_modules" && entry.name !== "python") walk(path);
      } else if (sourceExtension.test(entry.name) && !entry.name.endsWith(".d.ts") && !entry.name.endsWith(".d.mts")) {
        files.push(path);
      }
    }
  };
  walk(folder);
  return files.filter(isProduction).sort();
}

const folders = process.argv.length > 2 ? process.argv.slice(2).map((folder) => relative(root, folder).split(sep).join("/")) : defaultFolders;
const findings = [];
for (const cycle of folderCycles(cruise(folders))) findings.push(formatCycle(cycle));
for (const folder of folders) {
  for (const file of sourceFiles(folder)) {
    for (const found of longFunctions(readFileSync(join(root, file), "utf8"))) findings.push(formatLongFunction(file, found));
  }
}
for (const finding of findings) console.log(finding);
if (findings.length > 0) {
  console.error(`check-shape: ${findings.length} finding(s) (ARCHITECTURE.md, "Dependency rules")`);
  process.exit(1);
}
