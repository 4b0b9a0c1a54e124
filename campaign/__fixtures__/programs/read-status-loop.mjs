// Test program: reads status.json in a tight loop until <stop file> exists and reports how
// many reads it made and how many saw a torn (unparsable) file. Plain JS: no loader, so
// it starts reading quickly.
import { existsSync, readFileSync, writeFileSync } from "node:fs";

const [statusPath, stopFile, readyFile] = process.argv.slice(2);
let reads = 0;
let torn = 0;
let missing = 0;
const states = new Set();
writeFileSync(readyFile, "ready\n");
while (!existsSync(stopFile)) {
  let text;
  try {
    text = readFileSync(statusPath, "utf8");
  } catch {
    missing += 1;
    continue;
  }
  reads += 1;
  try {
    states.add(JSON.parse(text).step);
  } catch {
    torn += 1;
  }
}
console.log(JSON.stringify({ reads, torn, missing, distinctSteps: states.size }));
