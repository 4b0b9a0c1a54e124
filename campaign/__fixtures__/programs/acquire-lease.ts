// Test program: waits until a start file appears (so all copies race at once), tries to
// take the run's lease, and prints one JSON line saying whether it got it.
import { existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { acquireLease } from "../../lease.ts";
import { isA3rError } from "../../../core/errors.ts";

const [dir, owner, startFile] = process.argv.slice(2);
if (!dir || !owner || !startFile) {
  console.error("usage: acquire-lease <result dir> <owner> <start file>");
  process.exit(2);
}
while (!existsSync(startFile)) await sleep(2);
try {
  const handle = await acquireLease(dir, owner, 60_000);
  console.log(JSON.stringify({ owner, acquired: true, token: handle.token }));
} catch (error) {
  if (!isA3rError(error, "LEASE_HELD")) throw error;
  console.log(JSON.stringify({ owner, acquired: false }));
}
