import { execFile } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { SwarmClient } from "../../../swarm/client/index.ts";
import { startServerProcess, temporaryDirectory, waitFor, waitForState, type ServerProcess } from "../../../swarm/server/server-process.test-support.ts";
import { slowTests, slowTierNote } from "../../../test-support/slow-tests.ts";
import { a3rEntry } from "../../../test-support/run-cli.ts";

/**
 * A multi-model swarm end to end, as a person would run it: two `a3r swarm serve`
 * processes started from this task's two swarm.yaml (one policy each) and one
 * `a3r swarm client proposal-review --url proposer=… --url reviewer=…` process, whose every
 * episode claims on both servers, sends each role's call to its own server and ends each
 * server's episode with that role's reward.
 */
const here = fileURLToPath(new URL(".", import.meta.url));
const runTs = fileURLToPath(new URL("../../../bin/run-ts.js", import.meta.url));
const run = promisify(execFile);
const roles = ["proposer", "reviewer"] as const;
type Role = (typeof roles)[number];

let servers: ServerProcess[] = [];
let directory: { path: string; remove(): Promise<void> } | undefined;

afterEach(async () => {
  await Promise.all(servers.map((server) => server.kill()));
  servers = [];
  await directory?.remove();
});

/** The example's own swarm.yaml for a role, with the test's experiment folder and overrides (each key must already be there). */
async function exampleConfig(role: Role, overrides: Record<string, string | number>): Promise<string> {
  let text = await readFile(join(here, role, "swarm.yaml"), "utf8");
  for (const [key, value] of Object.entries({ experiment_dir: "./experiment", save_freq: 0, ...overrides })) {
    const line = new RegExp(`^${key}:.*$`, "m");
    if (!line.test(text)) throw new Error(`${role}/swarm.yaml has no top-level ${key} to override`);
    text = text.replace(line, `${key}: ${value}`);
  }
  return text;
}

async function startBoth(overrides: Record<string, string | number>): Promise<Record<Role, SwarmClient>> {
  directory = await temporaryDirectory("proposal-review");
  const started = await Promise.all(
    roles.map(async (role) => {
      const folder = join(directory!.path, role);
      await mkdir(folder);
      const server = await startServerProcess(folder, await exampleConfig(role, overrides));
      servers.push(server);
      return server;
    }),
  );
  const clients = { proposer: new SwarmClient({ url: started[0]!.url }), reviewer: new SwarmClient({ url: started[1]!.url }) };
  await Promise.all(roles.map((role) => waitForState(clients[role], "ENGINE.ROLLING")));
  return clients;
}

interface ClientSummary {
  completed: number;
  failed: number;
  rewardMean: Record<Role, number>;
  stoppedEarly?: string;
  failures: string[];
}

/** One client process for both roles: `a3r swarm client proposal-review --url proposer=URL --url reviewer=URL`. */
async function runClient(clients: Record<Role, SwarmClient>, episodes: number, seed: number): Promise<ClientSummary> {
  const { stdout } = await run(
    process.execPath,
    [
      a3rEntry,
      "swarm",
      "client",
      "proposal-review",
      ...["--url", `proposer=${clients.proposer.url}`, "--url", `reviewer=${clients.reviewer.url}`],
      ...["--episodes", String(episodes), "--concurrency", "8", "--seed", String(seed), "--discard-timeout", "60", "--json"],
    ],
    { env: { ...process.env, NO_COLOR: "1" }, maxBuffer: 16 * 1024 * 1024 },
  );
  return JSON.parse(stdout) as ClientSummary;
}

async function runningEpisodes(client: SwarmClient): Promise<number> {
  const details = (await client.poolInformation()).running_episode_details as Record<string, unknown> | null;
  return details === null ? 0 : Object.keys(details).length;
}

describe("proposal-review: two policies on two swarm servers", () => {
  it("trains both servers, each on its own role's reward, and leaves no episode claimed", async () => {
    // C2 with two groups per step, so a step needs 8 episodes whatever the rewards.
    const clients = await startBoth({ swarm_mode_sample_collection_method: "rollout_until_finish_enough_tasks", train_batch_size: 2, max_steps: 3 });
    const summary = await runClient(clients, 2000, 5);
    // Both servers train on the same episodes (groups of exactly num_repeat): they reach
    // max_steps together, and the first claim refused as finished ends the run.
    expect(summary.stoppedEarly).toMatch(/training has finished/);
    expect(summary.failed).toBe(0);
    expect(summary.completed).toBeGreaterThanOrEqual(3 * 2 * 4);
    for (const role of roles) {
      const client = clients[role];
      // The other server's last end may land a moment after the first one finished.
      await waitFor(`${role} at step 3`, async () => ((await client.status()).global_step === 3 ? true : undefined));
      const metrics = await client.metrics();
      expect(metrics).toHaveLength(3);
      // Every completed episode was rewarded on this server with this role's reward (a step
      // trained only on groups carried over from the last one has no rollout episodes).
      const episodes = metrics.reduce((sum, record) => sum + (record.rollout_episodes ?? 0), 0);
      const rewardSum = metrics.reduce((sum, record) => sum + (record.rollout_reward_mean ?? 0) * (record.rollout_episodes ?? 0), 0);
      expect(episodes).toBe(summary.completed);
      expect(rewardSum).toBeCloseTo(summary.rewardMean[role] * summary.completed, 6);
      expect(await runningEpisodes(client)).toBe(0);
    }
    // Each server got its own role's log metrics, never the other's.
    const [proposerMetrics, reviewerMetrics] = await Promise.all([clients.proposer.metrics(), clients.reviewer.metrics()]);
    expect(Object.keys(proposerMetrics[0]!)).toContain("log/accepted");
    expect(Object.keys(proposerMetrics[0]!)).not.toContain("log/proposal_right");
    expect(Object.keys(reviewerMetrics[0]!)).toEqual(expect.arrayContaining(["log/proposal_right", "log/answered_yes_or_no"]));
    expect(Object.keys(reviewerMetrics[0]!)).not.toContain("log/accepted");
  });

  it("a3r swarm client names the role to fix when a server is missing, unknown or unnamed (exit 2)", async () => {
    const attempt = (flags: string[]) =>
      run(process.execPath, [a3rEntry, "swarm", "client", "proposal-review", ...flags]).then(
        () => ({ code: 0, stderr: "" }),
        (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
      );
    expect(await attempt(["--url", "proposer=http://127.0.0.1:1"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/no server for the role reviewer/),
    });
    expect(await attempt(["--url", "proposer=http://127.0.0.1:1", "--url", "critic=http://127.0.0.1:2"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/has no role "critic" \(its roles: proposer, reviewer\)/),
    });
    expect(await attempt(["--url", "http://127.0.0.1:1"])).toMatchObject({ code: 2, stderr: expect.stringMatching(/name the role of http/) });
    // A swarm file maps roles to servers the same way.
    directory = await temporaryDirectory("proposal-review-swarm-file");
    const swarmFile = join(directory.path, "servers.yaml");
    await writeFile(swarmFile, "proposer: http://127.0.0.1:1\n");
    expect(await attempt(["--swarm", swarmFile])).toMatchObject({ code: 2, stderr: expect.stringMatching(/servers\.yaml: no server for the role reviewer/) });
  });

  it("the example's own client.ts names the flag to fix when a server URL is missing or bad (exit 2)", async () => {
    const attempt = (flags: string[]) =>
      run(process.execPath, [runTs, join(here, "client.ts"), ...flags]).then(
        () => ({ code: 0, stderr: "" }),
        (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
      );
    expect(await attempt(["--proposer", "http://127.0.0.1:1"])).toMatchObject({ code: 2, stderr: expect.stringMatching(/--reviewer is required/) });
    expect(await attempt(["--proposer", "ftp://x", "--reviewer", "http://127.0.0.1:1"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--proposer must be an http\(s\) URL/),
    });
  });

  it.skipIf(!slowTests)(
    `both policies learn from near chance (about 3 %) with the example's own configs${slowTierNote}`,
    async () => {
      const clients = await startBoth({});
      const summary = await runClient(clients, 1500, 11);
      expect(summary.failed).toBe(0);
      expect(summary.completed).toBe(1500);
      for (const role of roles) {
        // Steps trained only on carried-over groups have no rollout reward of their own.
        const curve = (await clients[role].metrics()).filter((record) => (record.rollout_episodes ?? 0) > 0).map((record) => record.rollout_reward_mean!);
        expect(curve.length).toBeGreaterThanOrEqual(10);
        const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
        expect(mean(curve.slice(0, 3)), `${role}: first steps`).toBeLessThan(0.2);
        // Over ten times chance: only the optimizer steps of this role's own server can do that.
        expect(mean(curve.slice(-3)), `${role}: last steps (${curve.map((value) => value.toFixed(2)).join(" ")})`).toBeGreaterThanOrEqual(0.4);
      }
      // The reviewer did not learn to reject everything: it accepts the proposer's right colours.
      const proposerMetrics = await clients.proposer.metrics();
      const lastAccepted = proposerMetrics.filter((record) => record["log/accepted"] !== undefined).slice(-3);
      expect(lastAccepted.reduce((sum, record) => sum + record["log/accepted"]!, 0) / lastAccepted.length).toBeGreaterThan(0.2);
    },
    300_000,
  );
});
