// The way into a sandbox's loopback-only network, for the one process outside that must
// reach in: the worker, which polls its swarm server. Run inside the sandbox, it accepts on
// a listening socket it inherited as a file descriptor (opened by the worker in the host's
// network namespace, so it stays reachable there) and forwards each connection to
// 127.0.0.1:<port> inside, where <port> is read from the first line of `file` matching
// `pattern` (its first group, a URL or a port; the server prints it once it listens).
// Nothing else outside can reach in: the descriptor is the only door, and the worker holds
// its address.
//
// Usage: node port-relay.mjs <fd> <file> <pattern>
import { readFileSync } from "node:fs";
import { connect, createServer } from "node:net";

const [fdText, file, pattern] = process.argv.slice(2);
const fd = Number(fdText);
if (!Number.isInteger(fd) || !file || !pattern) {
  process.stderr.write("usage: port-relay.mjs <fd> <file> <pattern>\n");
  process.exit(2);
}
const matcher = new RegExp(pattern);
let port;

function targetPort() {
  if (port !== undefined) return port;
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  const found = matcher.exec(text)?.[1];
  const number = Number(/:(\d+)\/?$/.exec(found ?? "")?.[1] ?? found);
  if (Number.isInteger(number) && number > 0 && number < 65536) port = number;
  return port;
}

const server = createServer((outside) => {
  const target = targetPort();
  if (target === undefined) {
    // Not listening yet: the caller sees a closed connection and retries, as it would
    // against a server that is still starting.
    outside.destroy();
    return;
  }
  const inside = connect(target, "127.0.0.1");
  outside.pipe(inside);
  inside.pipe(outside);
  outside.on("error", () => inside.destroy());
  inside.on("error", () => outside.destroy());
});
server.listen({ fd });
