import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startServerProcess, temporaryDirectory, waitForState, type ServerProcess } from "../swarm/server/server-process.test-support.ts";
import { SwarmClient } from "../swarm/client/index.ts";
import { runA3r, type CliResult } from "../test-support/run-cli.ts";

const a3r = (...args: string[]): Promise<CliResult> => runA3r(args);

let server: ServerProcess | undefined;
let directory: { path: string; remove(): Promise<void> } | undefined;
afterAll(async () => {
  await server?.kill();
  await directory?.remove();
});

describe("a3r swarm", () => {
  it("exits 2 naming the flag when a flag is wrong", async () => {
    const port = await a3r("swarm", "serve", "--config", "x.yaml", "--port", "http");
    expect(port.code).toBe(2);
    expect(port.stderr).toContain("--port");
    const episodes = await a3r("swarm", "client", "item-color", "--episodes", "-3");
    expect(episodes.code).toBe(2);
    expect(episodes.stderr).toContain("--episodes");
    const discard = await a3r("swarm", "client", "item-color", "--discard-timeout", "0");
    expect(discard.code).toBe(2);
    expect(discard.stderr).toContain("--discard-timeout");
    const url = await a3r("swarm", "status", "--url", "not a url");
    expect(url.code).toBe(2);
    expect(url.stderr).toContain("--url");
  });

  it("refuses to listen beyond loopback without an admin token of at least 24 characters (nothing is bound)", async () => {
    directory ??= await temporaryDirectory("swarm-cli");
    const config = join(directory.path, "open.yaml");
    await writeFile(config, "port: 0\n");
    const none = await a3r("swarm", "serve", "--config", config, "--host", "0.0.0.0", "--admin-token", "");
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("--host: listening on 0.0.0.0 (beyond this machine) needs an admin token of at least 24 characters");
    const short = await a3r("swarm", "serve", "--config", config, "--host", "0.0.0.0", "--admin-token", "short-token-1");
    expect(short.code).toBe(2);
    const missingFile = await a3r("swarm", "serve", "--config", config, "--admin-token-file", join(directory.path, "no-such-token"));
    expect(missingFile.code).toBe(1);
    expect(missingFile.stderr).toContain("cannot read the admin token file");
  });

  it("reports a config error with file, line and fix, and an unknown task with the known ones", async () => {
    directory ??= await temporaryDirectory("swarm-cli");
    const config = join(directory.path, "bad.yaml");
    await writeFile(config, "train_batch_size: 2\nsampling:\n  temprature: 1\n");
    const bad = await a3r("swarm", "serve", "--config", config);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`${config}:3: unknown key "sampling.temprature" — did you mean "temperature"?`);
    expect(bad.stderr).not.toContain("    at ");
    const task = await a3r("swarm", "client", "no-such-task");
    expect(task.code).toBe(1);
    expect(task.stderr).toContain("item-color");
  });

  it("shows status as a table and as JSON, and exits 1 when the server is unreachable", async () => {
    directory ??= await temporaryDirectory("swarm-cli");
    server = await startServerProcess(directory.path, `port: 0\nexperiment_dir: ${join(directory.path, "experiment")}\n`);
    await waitForState(new SwarmClient({ url: server.url }), "ENGINE.ROLLING");
    const table = await a3r("swarm", "status", "--url", server.url);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain("ENGINE.ROLLING");
    expect(table.stdout).toContain("rollout_until_finish_enough_tasks");
    const json = await a3r("swarm", "status", "--url", server.url, "--json");
    expect(JSON.parse(json.stdout)).toMatchObject({ status: { engine_status: "ENGINE.ROLLING", global_step: 0 }, pool: { task_expected_num_repeat: 4 } });
    await server.stop();
    const down = await a3r("swarm", "status", "--url", server.url);
    expect(down.code).toBe(1);
    expect(down.stdout).toContain("ENGINE.CANNOT_CONNECT");
  });

  it("exits 0 by itself after max_steps with --exit-when-finished, after a checkpoint", async () => {
    directory ??= await temporaryDirectory("swarm-cli");
    const experimentDir = join(directory.path, "finishing");
    const finishing = await startServerProcess(
      directory.path,
      `port: 0\ntrain_batch_size: 1\nnum_repeat: 1\nmax_steps: 1\nexperiment_dir: ${experimentDir}\n`,
      ["--exit-when-finished"],
    );
    const client = new SwarmClient({ url: finishing.url });
    await waitForState(client, "ENGINE.ROLLING");
    const episode = await client.beginEpisode();
    await client.endEpisode("only", episode.episodeUuid, { reward: 1 });
    const finished = await client.beginEpisode({ maxWaitMs: 10_000 }).catch((error: unknown) => error);
    expect((finished as Error).name).toBe("SwarmFinishedError");
    const started = Date.now();
    expect(await finishing.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(15_000);
    const latest = JSON.parse(await readFile(join(experimentDir, "checkpoints", "latest.json"), "utf8")) as { step: number };
    expect(latest.step).toBe(1);
  });
});
