import { connect, createServer, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { endpointOf, loopbackPeerUid, ownUid, uidInTable } from "./peer-user.ts";

const header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode";
/** One socket-table line: addresses in the kernel's hex (little-endian words), ports in hex. */
const line = (local: string, remote: string, state: string, uid: number) =>
  `   0: ${local} ${remote} ${state} 00000000:00000000 00:00000000 00000000 ${String(uid).padStart(5)}        0 12345 1 0`;
const endpoint = (address: string, port: number) => endpointOf(address, port)!;

describe("uidInTable", () => {
  it("reads the owner of the client's end, found by both addresses and both ports", () => {
    const table = [header, line("0100007F:8AE2", "0100007F:1F90", "01", 1000), line("0100007F:1F90", "0100007F:8AE2", "01", 0)].join("\n");
    expect(uidInTable(table, endpoint("127.0.0.1", 0x8ae2), endpoint("127.0.0.1", 0x1f90))).toBe(1000);
    expect(uidInTable(table, endpoint("127.0.0.1", 0x1f90), endpoint("127.0.0.1", 0x8ae2))).toBe(0);
    expect(uidInTable(table, endpoint("127.0.0.1", 1), endpoint("127.0.0.1", 2))).toBeUndefined();
  });

  it("is not fooled by a client bound to another loopback address on the server's own port", () => {
    // The attacker (uid 1000) connects from 127.0.0.2:8080 to the server on 127.0.0.1:8080: the
    // server's accepted end (owned by the server's user, 0) has the same two ports, listed first.
    const table = [header, line("0100007F:1F90", "0200007F:1F90", "01", 0), line("0200007F:1F90", "0100007F:1F90", "01", 1000)].join("\n");
    expect(uidInTable(table, endpoint("127.0.0.2", 0x1f90), endpoint("127.0.0.1", 0x1f90))).toBe(1000);
    // Node names an IPv4 peer of a dual-stack server ::ffff:127.0.0.2: the same socket.
    expect(uidInTable(table, endpoint("::ffff:127.0.0.2", 0x1f90), endpoint("::ffff:127.0.0.1", 0x1f90))).toBe(1000);
  });

  it("ignores an end that is not ESTABLISHED (the kernel lists TIME_WAIT and orphaned FIN_WAIT2 ends with uid 0)", () => {
    for (const state of ["06", "05", "0A"]) {
      const table = [header, line("0100007F:8AE2", "0100007F:1F90", state, 0)].join("\n");
      expect(uidInTable(table, endpoint("127.0.0.1", 0x8ae2), endpoint("127.0.0.1", 0x1f90)), state).toBeUndefined();
    }
  });

  it("reads tcp6 lines: ::1 and IPv4-mapped addresses", () => {
    const loopback6 = "00000000000000000000000001000000";
    const mapped = (word: string) => `0000000000000000FFFF0000${word}`;
    const table = [
      header,
      line(`${loopback6}:8AE2`, `${loopback6}:1F90`, "01", 1001),
      line(`${mapped("0100007F")}:8AE3`, `${mapped("0100007F")}:1F90`, "01", 1002),
    ].join("\n");
    expect(uidInTable(table, endpoint("::1", 0x8ae2), endpoint("::1", 0x1f90))).toBe(1001);
    expect(uidInTable(table, endpoint("127.0.0.1", 0x8ae3), endpoint("127.0.0.1", 0x1f90))).toBe(1002);
    expect(uidInTable(table, endpoint("::ffff:127.0.0.1", 0x8ae3), endpoint("::ffff:7f00:1", 0x1f90))).toBe(1002);
  });
});

/** The server's end of one real loopback connection from `client` (connect options) to a listener on `host`. */
async function acceptedFrom(host: string, client: { host: string }): Promise<{ socket: Socket; close(): void }> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, host, () => resolve()));
  const accepted = new Promise<Socket>((resolve) => server.once("connection", resolve));
  const outgoing = connect({ port: (server.address() as { port: number }).port, host: client.host });
  outgoing.on("error", () => undefined);
  const socket = await accepted;
  return {
    socket,
    close: () => {
      outgoing.destroy();
      socket.destroy();
      server.close();
    },
  };
}

describe.skipIf(process.platform !== "linux")("loopbackPeerUid on real connections", () => {
  const cases: Array<{ name: string; listen: string; client: string }> = [
    { name: "IPv4", listen: "127.0.0.1", client: "127.0.0.1" },
    { name: "IPv6 ::1", listen: "::1", client: "::1" },
    { name: "an IPv4 client of a dual-stack listener (::ffff:127.0.0.1)", listen: "::", client: "127.0.0.1" },
  ];
  for (const { name, listen, client } of cases)
    it(`names this process's own user: ${name}`, async (context) => {
      const connection = await acceptedFrom(listen, { host: client }).catch(() => undefined);
      // A machine without IPv6 on loopback cannot make the connection; nothing to check there.
      if (!connection) return context.skip();
      try {
        expect(loopbackPeerUid(connection.socket)).toBe(ownUid());
      } finally {
        connection.close();
      }
    });
});
