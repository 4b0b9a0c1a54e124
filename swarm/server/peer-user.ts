import { readFileSync } from "node:fs";
import type { Socket } from "node:net";

/**
 * Which local OS user opened a loopback connection, read from the kernel's socket tables
 * (/proc/net/tcp and tcp6): the client's end of the connection is listed there with the
 * uid that owns it. A token-less server uses it for the one request a client written for
 * AgentJet makes without a key (end and abort, PROTOCOL.md §7): accepted from the server's
 * own user, refused from any other local user.
 *
 * Undefined when it cannot be known (not Linux, no /proc, the peer is not on loopback, the
 * connection is already gone): callers then require the key.
 */
export function loopbackPeerUid(socket: Socket): number | undefined {
  const remote = socket.remoteAddress ?? "";
  if (!/^(127\.|::1$|::ffff:127\.)/.test(remote)) return undefined;
  const clientPort = socket.remotePort;
  const serverPort = socket.localPort;
  if (clientPort === undefined || serverPort === undefined) return undefined;
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    const uid = uidInTable(text, clientPort, serverPort);
    if (uid !== undefined) return uid;
  }
  return undefined;
}

/** The uid of the socket whose local port is the client's and remote port the server's. */
export function uidInTable(table: string, clientPort: number, serverPort: number): number | undefined {
  for (const line of table.split("\n").slice(1)) {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid ...; ports are hex after ':'.
    const fields = line.trim().split(/\s+/);
    if (fields.length < 8) continue;
    const localPort = Number.parseInt(fields[1]!.split(":")[1] ?? "", 16);
    const remotePort = Number.parseInt(fields[2]!.split(":")[1] ?? "", 16);
    if (localPort === clientPort && remotePort === serverPort) {
      const uid = Number.parseInt(fields[7]!, 10);
      return Number.isInteger(uid) ? uid : undefined;
    }
  }
  return undefined;
}

/** The server process's own uid (undefined where the platform has none). */
export function ownUid(): number | undefined {
  return typeof process.getuid === "function" ? process.getuid() : undefined;
}
