import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { SwarmClient, runEpisodes, type EpisodeTask } from "../client/index.ts";
import { startServerProcess, temporaryDirectory, waitFor, waitForState, type ServerProcess } from "./server-process.test-support.ts";

/**
 * Failures that a multi-day run meets for sure: a client dies mid-episode (its episode
 * must be reclaimed and its key revoked, or the step would wait forever and a stale
 * process could write into someone else's claim), and the server itself is SIGKILLed
 * (it must come back from its last checkpoint, not from zero).
 */
const fixture = fileURLToPath(new URL("./__fixtures__/hanging-client.ts", import.meta.url));
const config = (experimentDir: string): string =>
  [
    "port: 0",
    "train_batch_size: 2",
    "num_repeat: 2",
    "save_freq: 2",
    "max_env_worker: 16",
    `experiment_dir: ${experimentDir}`,
    "episode_idle_timeout: 30",
  ].join("\n");

/** A one-call task defined here, so swarm/ stays free of the rest of a3r. */
const itemColor: EpisodeTask<{ taskId: string; item: string }> = {
  name: "colour",
  sampleTask: (seed) => {
    const item = ["sky", "apple", "grass", "snow"][seed % 4]!;
    return { taskId: `colour-${item}`, item };
  },
  async runEpisode(openai, task) {
    const answer = await openai.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: `What colour is the ${task.item}?` }],
      max_tokens: 3,
    });
    const reward = (answer.choices[0]?.message.content ?? "").length % 3 === 0 ? 1 : 0;
    return { reward, isSuccess: reward === 1 };
  },
};

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

function startHangingClient(
  url: string,
  discardTimeoutSeconds: number,
): Promise<{ child: ReturnType<typeof spawn>; episode: { episodeUuid: string; apiKey: string; baseUrl: string; clientUuid: string } }> {
  const child = spawn(process.execPath, ["--import", "tsx", fixture, url, String(discardTimeoutSeconds)], { stdio: ["ignore", "pipe", "pipe"] });
  cleanups.push(async () => child.kill("SIGKILL"));
  let output = "";
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const line = output.split("\n").find((candidate) => candidate.startsWith("{"));
      if (line) resolve({ child, episode: JSON.parse(line) });
    });
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("exit", (code) => reject(new Error(`hanging client exited with ${code}: ${output}`)));
  });
}

describe("swarm recovery", () => {
  it("reclaims the episode of a killed client, revokes its key, and keeps training with new clients", async () => {
    const directory = await temporaryDirectory("swarm-recovery");
    cleanups.push(directory.remove);
    const server = await startServerProcess(directory.path, config(join(directory.path, "experiment")));
    cleanups.push(server.kill);
    const client = new SwarmClient({ url: server.url });
    await waitForState(client, "ENGINE.ROLLING");

    const { child, episode } = await startHangingClient(server.url, 1);
    const deadKey = new OpenAI({ baseURL: episode.baseUrl, apiKey: episode.apiKey, maxRetries: 0 });
    child.kill("SIGKILL");
    const killedAt = Date.now();

    // A new client starts right away; the step cannot close until the dead episode is reclaimed.
    let firstServedAt: number | undefined;
    const training = runEpisodes({
      client,
      task: itemColor,
      episodes: 48,
      concurrency: 4,
      seed: 7,
      onProgress: (progress) => {
        if (progress.last.ok) firstServedAt ??= Date.now();
      },
    });
    await waitFor(
      "the dead episode to be reclaimed",
      // Another process's episode: this client sees only counts (episode uuids are capabilities).
      async () => (((await client.poolInformation()).counters as Record<string, number>).episodes_reclaimed! >= 1 ? true : undefined),
      10_000,
    );
    const refused = await deadKey.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);

    const summary = await training;
    expect(summary.completed).toBe(48);
    expect(firstServedAt! - killedAt).toBeLessThan(5000);
    const status = await client.status();
    expect(status.global_step).toBeGreaterThanOrEqual(4);
    const pool = await client.poolInformation();
    expect((pool.counters as Record<string, number>).episodes_reclaimed).toBe(1);
  });

  it("resumes from the last checkpoint's step after a SIGKILL of the server", async () => {
    const directory = await temporaryDirectory("swarm-resume");
    cleanups.push(directory.remove);
    const experimentDir = join(directory.path, "experiment");
    let server: ServerProcess = await startServerProcess(directory.path, config(experimentDir));
    cleanups.push(() => server.kill());
    let client = new SwarmClient({ url: server.url });
    await waitForState(client, "ENGINE.ROLLING");
    await runEpisodes({ client, task: itemColor, episodes: 40, concurrency: 4, seed: 3 });
    await waitFor("a checkpoint", async () => ((await client.status()).global_step >= 4 ? true : undefined));
    await server.kill();

    const latest = JSON.parse(await readFile(join(experimentDir, "checkpoints", "latest.json"), "utf8")) as { step: number };
    expect(latest.step).toBeGreaterThanOrEqual(4);
    expect(latest.step % 2).toBe(0);

    server = await startServerProcess(directory.path, config(experimentDir), ["--resume"]);
    client = new SwarmClient({ url: server.url });
    await waitForState(client, "ENGINE.ROLLING");
    expect((await client.status()).global_step).toBe(latest.step);
    const metrics = await client.metrics();
    expect(metrics.map((entry) => entry.step)).toEqual(Array.from({ length: latest.step }, (_, index) => index + 1));

    await runEpisodes({ client, task: itemColor, episodes: 8, concurrency: 4, seed: 11 });
    await waitFor("training to continue", async () => ((await client.status()).global_step > latest.step ? true : undefined));
    // SIGTERM: checkpoint on stop, clean exit.
    expect(await server.stop()).toBe(0);
    const final = JSON.parse(await readFile(join(experimentDir, "checkpoints", "latest.json"), "utf8")) as { step: number };
    expect(final.step).toBeGreaterThan(latest.step);
  });
});
