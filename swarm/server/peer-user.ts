import { closeSync, openSync, readSync } from "node:fs";
import { isIPv4, isIPv6, type Socket } from "node:net";
import { endianness } from "node:os";

/**
 * Which local OS user opened a loopback connection, read from the kernel's socket tables
 * (/proc/net/tcp and tcp6): the client's end of the connection is listed there with the
 * uid that owns it. A token-less server uses it for the one request a client written for
 * AgentJet makes without a key (end and abort, PROTOCOL.md §7): accepted from the server's
 * own user, refused from any other local user.
 *
 * The client's end is found by the whole connection (both addresses and both ports), not
 * by the ports alone: another user can bind 127.0.0.2 to the server's own port, and then
 * the server's accepted socket (owned by the server's user) has the same two ports as the
 * attacker's end. Only an ESTABLISHED entry counts: the kernel lists a closed end waiting
 * out TIME_WAIT or an orphaned FIN_WAIT2 with uid 0, so a client that closed right after
 * sending its request would otherwise pass for root.
 *
 * Undefined when it cannot be known (not Linux, no /proc, the peer is not on loopback, the
 * connection is already gone, the tables are past `maxTableBytes`): callers then require
 * the key.
 */
export function loopbackPeerUid(socket: Socket): number | undefined {
  const cached = knownPeers.get(socket);
  if (cached !== undefined) return cached;
  const peer = endpointOf(socket.remoteAddress, socket.remotePort);
  const server = endpointOf(socket.localAddress, socket.localPort);
  if (peer === undefined || server === undefined || !isLoopback(peer.address)) return undefined;
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    const text = readBounded(table, maxTableBytes);
    const uid = text === undefined ? undefined : uidInTable(text, peer, server);
    if (uid !== undefined) {
      // The peer's end is held open by ours, so it cannot change owner while this socket lives.
      knownPeers.set(socket, uid);
      return uid;
    }
  }
  return undefined;
}

/** One end of a TCP connection: its address as 16 bytes (IPv4 as ::ffff:a.b.c.d) and port. */
export interface Endpoint {
  address: Buffer;
  port: number;
}

/**
 * The uid of the ESTABLISHED socket whose local end is `peer` and remote end `server`, from
 * the text of /proc/net/tcp or tcp6. Linear in the table's size; the ports are checked
 * before anything is decoded.
 */
export function uidInTable(table: string, peer: Endpoint, server: Endpoint): number | undefined {
  const peerPort = `:${hexPort(peer.port)}`;
  const serverPort = `:${hexPort(server.port)}`;
  for (const line of table.split("\n")) {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid ...; "ADDRESS:PORT" in hex.
    const fields = line.trim().split(/\s+/);
    if (fields.length < 8 || fields[3] !== established) continue;
    const [local, remote] = [fields[1]!, fields[2]!];
    if (!local.endsWith(peerPort) || !remote.endsWith(serverPort)) continue;
    const localAddress = tableAddress(local.slice(0, -peerPort.length));
    const remoteAddress = tableAddress(remote.slice(0, -serverPort.length));
    if (!localAddress?.equals(peer.address) || !remoteAddress?.equals(server.address)) continue;
    const uid = Number(fields[7]);
    return Number.isInteger(uid) && uid >= 0 ? uid : undefined;
  }
  return undefined;
}

/** The endpoint of a socket's address and port as Node gives them ("127.0.0.1", "::ffff:127.0.0.1", "::1"). */
export function endpointOf(address: string | undefined, port: number | undefined): Endpoint | undefined {
  if (address === undefined || port === undefined) return undefined;
  const bytes = addressBytes(address);
  return bytes === undefined ? undefined : { address: bytes, port };
}

/**
 * Whether this machine can name a loopback peer's user at all (Linux with a readable
 * /proc/net/tcp). Where it cannot, a token-less server cannot tell local users apart and
 * says so in PROTOCOL.md §7; where it can, a peer not found in the tables is refused.
 */
export function peerUsersKnowable(): boolean {
  if (ownUid() === undefined) return false;
  try {
    closeSync(openSync("/proc/net/tcp", "r"));
    return true;
  } catch {
    return false;
  }
}

/** The server process's own uid (undefined where the platform has none). */
export function ownUid(): number | undefined {
  return typeof process.getuid === "function" ? process.getuid() : undefined;
}

/** Past this the tables are not read (a crowded machine): the key is required instead. */
const maxTableBytes = 32 * 1024 * 1024;
const established = "01";
const knownPeers = new WeakMap<Socket, number>();

function hexPort(port: number): string {
  return port.toString(16).toUpperCase().padStart(4, "0");
}

function isLoopback(address: Buffer): boolean {
  const mapped = address.subarray(0, 12).equals(v4MappedPrefix);
  if (mapped) return address[12] === 127;
  return address.equals(ipv6Loopback);
}

const v4MappedPrefix = Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);
const ipv6Loopback = Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);

/** "127.0.0.1", "::1", "::ffff:127.0.0.1", "fe80::1%eth0" as 16 bytes. */
function addressBytes(text: string): Buffer | undefined {
  const address = text.replace(/%.*$/, "");
  if (isIPv4(address)) return Buffer.concat([v4MappedPrefix, Buffer.from(address.split(".").map(Number))]);
  if (!isIPv6(address)) return undefined;
  // An embedded IPv4 tail (::ffff:127.0.0.1) becomes two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  const plain = dotted
    ? address.replace(dotted[1]!, () => {
        const [a, b, c, d] = dotted[1]!.split(".").map(Number) as [number, number, number, number];
        return `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
      })
    : address;
  const [head, tail] = plain.split("::") as [string, string | undefined];
  const groupsOf = (part: string | undefined) => (part ? part.split(":") : []);
  const missing = 8 - groupsOf(head).length - groupsOf(tail).length;
  const groups = tail === undefined ? groupsOf(head) : [...groupsOf(head), ...Array<string>(missing).fill("0"), ...groupsOf(tail)];
  const bytes = Buffer.alloc(16);
  groups.forEach((group, index) => bytes.writeUInt16BE(Number.parseInt(group, 16), index * 2));
  return bytes;
}

/**
 * An address as the socket tables print it: 8 hex digits (IPv4) or 32 (IPv6), each 32-bit
 * word in the machine's byte order.
 */
function tableAddress(hex: string): Buffer | undefined {
  if (!/^(?:[0-9A-Fa-f]{8}|[0-9A-Fa-f]{32})$/.test(hex)) return undefined;
  const words = Buffer.from(hex, "hex");
  if (endianness() === "LE") for (let offset = 0; offset < words.length; offset += 4) words.subarray(offset, offset + 4).reverse();
  return words.length === 4 ? Buffer.concat([v4MappedPrefix, words]) : words;
}

/** The file's text, or undefined when it cannot be read or is longer than `limit` bytes. */
function readBounded(path: string, limit: number): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return undefined;
  }
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.alloc(256 * 1024);
      const read = readSync(fd, chunk, 0, chunk.length, null);
      if (read === 0) return Buffer.concat(chunks, total).toString("latin1");
      total += read;
      if (total > limit) return undefined;
      chunks.push(chunk.subarray(0, read));
    }
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}
