import { connect, createServer, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { loopbackPeerUid, ownUid, uidInTable } from "./peer-user.ts";

describe("loopbackPeerUid", () => {
  it("reads the owner of the client's end from a socket table line (ports in hex)", () => {
    const table = [
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
      "   0: 0100007F:8AE2 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 12345 1 0",
      "   1: 0100007F:1F90 0100007F:8AE2 01 00000000:00000000 00:00000000 00000000     0        0 12346 1 0",
    ].join("\n");
    expect(uidInTable(table, 0x8ae2, 0x1f90)).toBe(1000);
    expect(uidInTable(table, 0x1f90, 0x8ae2)).toBe(0);
    expect(uidInTable(table, 1, 2)).toBeUndefined();
  });

  it.skipIf(process.platform !== "linux")("names this process's own user for a real loopback connection", async () => {
    const accepted = new Promise<Socket>((resolve) => {
      const server = createServer((socket) => {
        resolve(socket);
        server.close();
      });
      server.listen(0, "127.0.0.1", () => {
        const client = connect((server.address() as { port: number }).port, "127.0.0.1");
        client.on("error", () => undefined);
        setTimeout(() => client.destroy(), 2000);
      });
    });
    const socket = await accepted;
    expect(loopbackPeerUid(socket)).toBe(ownUid());
    socket.destroy();
  });
});
