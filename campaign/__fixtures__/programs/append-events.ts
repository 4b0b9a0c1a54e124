// Test program: appends <count> events of about <bytes> bytes each to one log, as fast as
// it can, so several copies at once show whether lines from processes interleave.
import { appendEvent } from "../../event-log.ts";

const [path, writer, countText, bytesText] = process.argv.slice(2);
if (!path || !writer || !countText || !bytesText) {
  console.error("usage: append-events <events.jsonl> <writer> <count> <bytes>");
  process.exit(2);
}
const padding = writer.repeat(Math.ceil(Number(bytesText) / writer.length)).slice(0, Number(bytesText));
await Promise.all(Array.from({ length: Number(countText) }, (_, index) => appendEvent(path, "test.appended", { writer, index, padding })));
