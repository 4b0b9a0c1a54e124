import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseSwarmConfig } from "../config/config.ts";
import { silentLogger } from "../server/logger.ts";
import { temporaryDirectory, waitFor } from "../server/server-process.test-support.ts";
import { startSwarmServer, type SwarmServer } from "../server/swarm-server.ts";
import { beginMultiEpisode, MultiEpisodeClaimTimeoutError, MultiEpisodeEndError, runMultiEpisode } from "./multi-model.ts";
import { SwarmClient, SwarmFinishedError } from "./swarm-client.ts";

/**
 * The multi-model helper against two real swarm servers (one per role): each role gets its
 * own server's episode and key, each server gets its own role's reward, and whatever goes
 * wrong (a refused claim, a throwing body, a refused end, a server that never grants)
 * leaves no episode claimed on either server.
 */
let directory: { path: string; remove(): Promise<void> };
const servers: SwarmServer[] = [];
let proposer: SwarmClient;
let reviewer: SwarmClient;

async function serve(name: string, configLines: string[] = [], autoStart = true): Promise<SwarmServer> {
  const config = parseSwarmConfig(["port: 0", "save_freq: 0", `experiment_dir: ./${name}`, ...configLines].join("\n"), { baseDirectory: directory.path });
  const server = await startSwarmServer({ config, logger: silentLogger, autoStart });
  servers.push(server);
  return server;
}

const client = (server: SwarmServer): SwarmClient => new SwarmClient({ url: server.url, backoff: { initialMs: 10, maxMs: 100 } });

async function rolling(swarm: SwarmClient): Promise<void> {
  await waitFor("ENGINE.ROLLING", async () => ((await swarm.status()).engine_status === "ENGINE.ROLLING" ? true : undefined));
}

/** Episodes the server still counts as claimed (the admin-free pool view, pseudonymous). */
async function runningEpisodes(swarm: SwarmClient): Promise<number> {
  const details = (await swarm.poolInformation()).running_episode_details as Record<string, unknown> | null;
  return details === null ? 0 : Object.keys(details).length;
}

async function ownEpisode(swarm: SwarmClient, episodeUuid: string): Promise<Record<string, unknown> | undefined> {
  return (await swarm.episodeBuffer()).find((entry) => entry.episode_uuid === episodeUuid);
}

async function chat(baseUrl: string, apiKey: string): Promise<number> {
  const response = await fetch(`${baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ model: "policy", messages: [{ role: "user", content: "What colour is the sky?" }], max_tokens: 2 }),
  });
  await response.text();
  return response.status;
}

beforeAll(async () => {
  directory = await temporaryDirectory("multi-model");
  proposer = client(await serve("proposer"));
  reviewer = client(await serve("reviewer"));
  await Promise.all([rolling(proposer), rolling(reviewer)]);
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
  await directory?.remove();
});

describe("beginMultiEpisode / runMultiEpisode", () => {
  it("claims one episode per server, each role chats with its own key, and each server is ended with its own role's reward", async () => {
    const episode = await beginMultiEpisode({ proposer, reviewer }, "task-1");
    const { proposer: mine, reviewer: theirs } = episode.handles;
    expect(mine.baseUrl).toBe(`${proposer.url}/v1`);
    expect(theirs.baseUrl).toBe(`${reviewer.url}/v1`);
    expect(await chat(mine.baseUrl, mine.apiKey)).toBe(200);
    expect(await chat(theirs.baseUrl, theirs.apiKey)).toBe(200);
    // A key is its own server's: the proposer's key opens nothing on the reviewer's server.
    expect(await chat(theirs.baseUrl, mine.apiKey)).toBe(401);
    expect(await ownEpisode(proposer, mine.episodeUuid)).toMatchObject({ status: "running", llm_call_count: 1 });
    expect(await ownEpisode(reviewer, theirs.episodeUuid)).toMatchObject({ status: "running", llm_call_count: 1 });

    await episode.end({ proposer: { reward: 1, isSuccess: true }, reviewer: { reward: 0.25 } });
    expect(episode.settled).toBe(true);
    expect(await ownEpisode(proposer, mine.episodeUuid)).toMatchObject({ status: "ended", reward: 1 });
    expect(await ownEpisode(reviewer, theirs.episodeUuid)).toMatchObject({ status: "ended", reward: 0.25 });
    expect(await chat(mine.baseUrl, mine.apiKey)).toBe(401);
    await expect(episode.end({ proposer: { reward: 1 }, reviewer: { reward: 1 } })).rejects.toThrow(/already ended or aborted/);
  });

  it("aborts every role's episode when the body throws, and rethrows", async () => {
    let seen: Record<string, { episodeUuid: string }> = {};
    await expect(
      runMultiEpisode({ proposer, reviewer }, "task-2", async (handles) => {
        seen = handles;
        throw new Error("the agent crashed");
      }),
    ).rejects.toThrow("the agent crashed");
    expect(await ownEpisode(proposer, seen.proposer!.episodeUuid)).toMatchObject({ status: "aborted" });
    expect(await ownEpisode(reviewer, seen.reviewer!.episodeUuid)).toMatchObject({ status: "aborted" });
    expect([await runningEpisodes(proposer), await runningEpisodes(reviewer)]).toEqual([0, 0]);
  });

  it("refuses outcomes that do not name exactly the roles, aborting both episodes", async () => {
    const episode = await beginMultiEpisode({ proposer, reviewer }, "task-3");
    await expect(episode.end({ proposer: { reward: 1 } } as never)).rejects.toThrow(/exactly the roles proposer, reviewer \(missing reviewer\)/);
    expect(await ownEpisode(proposer, episode.handles.proposer.episodeUuid)).toMatchObject({ status: "aborted" });
    expect(await ownEpisode(reviewer, episode.handles.reviewer.episodeUuid)).toMatchObject({ status: "aborted" });
  });

  it("ends the roles whose server accepts and aborts the rest when one end is refused", async () => {
    const episode = await beginMultiEpisode({ proposer, reviewer }, "task-4");
    // The reviewer's server no longer has the episode running (as after a drain or reclaim).
    await reviewer.abortEpisode(episode.handles.reviewer.episodeUuid, "task-4");
    const failure = await episode.end({ proposer: { reward: 1 }, reviewer: { reward: 1 } }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(MultiEpisodeEndError);
    expect((failure as MultiEpisodeEndError).failures.map(({ role }) => role)).toEqual(["reviewer"]);
    expect((failure as MultiEpisodeEndError).ended).toEqual(["proposer"]);
    expect(await ownEpisode(proposer, episode.handles.proposer.episodeUuid)).toMatchObject({ status: "ended", reward: 1 });
    expect([await runningEpisodes(proposer), await runningEpisodes(reviewer)]).toEqual([0, 0]);
  });

  it("gives back the claims it got when another server refuses (training finished there)", async () => {
    // A server that finishes after one step of one episode.
    const finished = client(
      await serve("finished", [
        "train_batch_size: 1",
        "num_repeat: 1",
        "swarm_mode_sample_collection_method: rollout_until_finish_enough_episodes",
        "max_steps: 1",
      ]),
    );
    await rolling(finished);
    const only = await finished.beginEpisode();
    await finished.endEpisode("warm-up", only.episodeUuid, { reward: 1 });
    await waitFor("training finished", async () => ((await finished.status()).engine_status_detail.startsWith("finished") ? true : undefined));

    const abortedBefore = ((await proposer.poolInformation()).counters as Record<string, number>).episodes_aborted!;
    await expect(beginMultiEpisode({ proposer, reviewer: finished }, "task-5")).rejects.toBeInstanceOf(SwarmFinishedError);
    expect(await runningEpisodes(proposer)).toBe(0);
    // The proposer's server did grant its claim, and got it back.
    expect(((await proposer.poolInformation()).counters as Record<string, number>).episodes_aborted).toBe(abortedBefore + 1);
  });

  it("holds a granted claim only briefly while another server is not rolling, and succeeds once it is", async () => {
    const lateServer = await serve("late", [], false);
    const late = client(lateServer);
    const claimedBefore = ((await proposer.poolInformation()).counters as Record<string, number>).episodes_claimed!;
    const timedOut = await beginMultiEpisode({ proposer, reviewer: late }, "task-6", {
      holdMs: 50,
      maxWaitMs: 1000,
      backoff: { initialMs: 10, maxMs: 50 },
    }).catch((error: unknown) => error);
    expect(timedOut).toBeInstanceOf(MultiEpisodeClaimTimeoutError);
    expect((timedOut as Error).message).toMatch(/still waiting on reviewer\); no claim is held/);
    expect(await runningEpisodes(proposer)).toBe(0);
    // It released and re-claimed in rounds rather than sitting on one claim.
    expect(((await proposer.poolInformation()).counters as Record<string, number>).episodes_claimed).toBeGreaterThan(claimedBefore + 1);

    const waiting = beginMultiEpisode({ proposer, reviewer: late }, "task-7", { holdMs: 50, backoff: { initialMs: 10, maxMs: 50 } });
    await late.start();
    const episode = await waiting;
    expect(await runningEpisodes(proposer)).toBe(1);
    await episode.end({ proposer: { reward: 0 }, reviewer: { reward: 1 } });
    expect(await ownEpisode(late, episode.handles.reviewer.episodeUuid)).toMatchObject({ status: "ended", reward: 1 });
  });

  it("names the fix when no role is given", async () => {
    await expect(beginMultiEpisode({}, "task-8")).rejects.toThrow(/give at least one role/);
  });
});
