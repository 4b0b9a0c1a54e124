import { spawn } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, it } from "vitest";
import { startServerProcess, temporaryDirectory, waitForState, type ServerProcess } from "../swarm/server/server-process.test-support.ts";
import { SwarmClient, SwarmEngineFailedError } from "../swarm/client/index.ts";
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
    // Long but guessable: refused for its entropy, not its length.
    const patterned = await a3r("swarm", "serve", "--config", config, "--host", "0.0.0.0", "--admin-token", "ab".repeat(20));
    expect(patterned.code).toBe(2);
    expect(patterned.stderr).toContain("the admin token is too easy to guess");
    // host from the config file, an empty token in the environment: refused the same way, naming `host`.
    const openConfig = join(directory.path, "open-host.yaml");
    await writeFile(openConfig, "port: 0\nhost: 0.0.0.0\n");
    const fromFile = await runA3r(["swarm", "serve", "--config", openConfig], { env: { A3R_SWARM_ADMIN_TOKEN: "" } });
    expect(fromFile.code).toBe(2);
    expect(fromFile.stderr).toContain("host: listening on 0.0.0.0 (beyond this machine) needs an admin token of at least 24 characters");
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

  it("swarm check accepts an AgentJet tutorial-shaped job saying how each key maps, and refuses what a3r cannot train, naming the line", async () => {
    // One fixture through the CLI (what it prints and its exit codes); all three tutorial
    // shapes, key by key, are swarm/config/agentjet.test.ts's, in process: each CLI start
    // costs seconds on a loaded machine.
    const fixtures = resolve(import.meta.dirname, "..", "swarm", "config", "__fixtures__", "agentjet");
    directory ??= await temporaryDirectory("swarm-cli");
    const refused = join(directory.path, "gamma.yaml");
    await writeFile(refused, "ajet:\n  rollout:\n    gamma: 0.9\n");
    const [math, bad] = await Promise.all([join(fixtures, "math-agent.yaml"), refused].map((path) => a3r("swarm", "check", "--config", path)));
    expect(math!.code).toBe(0);
    expect(math!.stdout).toContain("ok (AgentJet's form)");
    // A tutorial that says nothing of merging gets AgentJet's default, and the output says so.
    expect(math!.stdout).toContain(`mapped: ignore_tools ← ajet.context_tracker.timeline_merging_policy.ignore_tools = true (AgentJet's default)`);
    expect(bad!.code).toBe(1);
    expect(bad!.stderr).toContain(`${refused}:3: AgentJet key ajet.rollout.gamma`);
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

  it("exits 1 with the field and its bound when the engine cannot boot, instead of staying up OFFLINE", async () => {
    directory ??= await temporaryDirectory("swarm-cli");
    const clip = join(directory.path, "clip.yaml");
    await writeFile(clip, "port: 0\noptimizer:\n  clip: 5\n");
    const refused = await a3r("swarm", "serve", "--config", clip);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/clip\.yaml:3: invalid value for "optimizer\.clip": .*<=\s*1/);
    // An engine that fails while loading (its upstream is not there): the server had said
    // ready, and still exits 1 with the engine's reason.
    const closedPort = await new Promise<number>((resolvePort) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolvePort(port));
      });
    });
    const upstreamless = join(directory.path, "upstreamless.yaml");
    await writeFile(
      upstreamless,
      `port: 0\nexperiment_dir: ${join(directory.path, "upstreamless")}\nmodel:\n  kind: openai-compatible\n  base_url: http://127.0.0.1:${closedPort}/v1\n  model: base\n`,
    );
    const failed = await a3r("swarm", "serve", "--config", upstreamless);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain("swarm server ready on");
    expect(failed.stderr).toContain("the engine failed to boot");
  });

  it("makes a failed training step a terminal answer: engine status, the SDK's error, the metrics, and exit 1", async () => {
    directory ??= await temporaryDirectory("swarm-cli");
    const repositoryRoot = resolve(import.meta.dirname, "..");
    // A real upstream process (the embedded policy served like vLLM) and no trainer_command:
    // the engine answers completions but its first optimizer step fails.
    const upstream = spawn(
      process.execPath,
      [join(repositoryRoot, "bin/run-ts.js"), join(repositoryRoot, "swarm/engines/openai-compatible/fixtures/upstream.ts"), "--port", "0"],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    try {
      const upstreamPort = await new Promise<number>((resolvePort, reject) => {
        upstream.once("exit", (code) => reject(new Error(`upstream exited with ${code}`)));
        createInterface({ input: upstream.stdout! }).once("line", (line) => resolvePort((JSON.parse(line) as { port: number }).port));
      });
      const folder = join(directory.path, "failing-step");
      await mkdir(folder, { recursive: true });
      const experimentDir = join(folder, "experiment");
      const failing = await startServerProcess(
        folder,
        `port: 0\ntrain_batch_size: 1\nnum_repeat: 1\nexperiment_dir: ${experimentDir}\nmodel:\n  kind: openai-compatible\n  base_url: http://127.0.0.1:${upstreamPort}/v1\n  model: base\n`,
      );
      const client = new SwarmClient({ url: failing.url, backoff: { initialMs: 20, maxMs: 100 } });
      await waitForState(client, "ENGINE.ROLLING");
      const episode = await client.beginEpisode();
      const completion = await fetch(`${episode.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${episode.apiKey}` },
        body: JSON.stringify({ model: "base", messages: [{ role: "user", content: "what colour is the sky" }], max_tokens: 2 }),
      });
      expect(completion.status).toBe(200);
      await client.endEpisode("sky", episode.episodeUuid, { reward: 1 });
      await waitForState(client, "ENGINE.OFFLINE");
      const status = await client.status();
      expect(status.engine_failure).toMatchObject({ stage: "train", step: 0 });
      expect(String((status.engine_failure as { error: string }).error)).toContain("trainer_command");
      // The SDK does not wait for a server that will never roll again.
      const next = await client.beginEpisode({ maxWaitMs: 20_000 }).catch((error: unknown) => error);
      expect(next).toBeInstanceOf(SwarmEngineFailedError);
      expect((next as Error).message).toContain("the training step 1 failed");
      const metrics = await client.metrics();
      expect(metrics[metrics.length - 1]).toMatchObject({ step: 1, step_failed: 1, episodes: 1 });
      expect(await failing.exited).toBe(1);
      expect(failing.output()).toContain("the training step 1 failed");
      const recorded = (await readFile(join(experimentDir, "metrics.jsonl"), "utf8"))
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(recorded[recorded.length - 1]).toMatchObject({ step_failed: 1 });
      expect(String(recorded[recorded.length - 1]!.error)).toContain("trainer_command");
    } finally {
      upstream.kill("SIGTERM");
    }
  });
});
