import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { parseSwarmConfig } from "../config/config.ts";
import { temporaryDirectory } from "../server/server-process.test-support.ts";
import { silentLogger } from "../server/logger.ts";
import { startSwarmServer, type SwarmServer } from "../server/swarm-server.ts";
import { SwarmClient } from "./swarm-client.ts";

/**
 * The client outlives its server: it reports ENGINE.CANNOT_CONNECT instead of throwing,
 * and a claim made while the server is down (or still booting) succeeds once it is up.
 */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

let server: SwarmServer | undefined;
let directory: { path: string; remove(): Promise<void> } | undefined;
afterAll(async () => {
  await server?.close();
  await directory?.remove();
});

describe("SwarmClient against a server that is not there yet", () => {
  it("synthesizes CANNOT_CONNECT, then claims an episode once the server comes up", async () => {
    const port = await freePort();
    const client = new SwarmClient({ url: `http://127.0.0.1:${port}`, backoff: { initialMs: 20, maxMs: 200 } });
    const status = await client.status();
    expect(status.engine_status).toBe("ENGINE.CANNOT_CONNECT");
    expect(status.global_step).toBe(-1);

    const claim = client.beginEpisode({ maxWaitMs: 30_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    directory = await temporaryDirectory("swarm-client");
    server = await startSwarmServer({ config: parseSwarmConfig(`port: ${port}\n`, { baseDirectory: directory.path }), logger: silentLogger });
    const episode = await claim;
    expect(episode.baseUrl).toBe(`http://127.0.0.1:${port}/v1`);
    expect(await client.canContinue(episode.episodeUuid)).toBe(true);
    await client.abortEpisode(episode.episodeUuid);
    expect(await client.canContinue(episode.episodeUuid)).toBe(false);
  });
});
