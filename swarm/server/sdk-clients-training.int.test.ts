import { afterAll, describe, expect, it } from "vitest";
import { itemColorOverAnthropic, itemColorOverResponses } from "../../examples/tasks/item-color/sdk-variants.ts";
import { runEpisodes, SwarmClient } from "../client/index.ts";
import { parseSwarmConfig } from "../config/config.ts";
import { silentLogger } from "./logger.ts";
import { temporaryDirectory, waitFor, waitForState } from "./server-process.test-support.ts";
import { startSwarmServer, type SwarmServer } from "./swarm-server.ts";

/**
 * The item-color example trained through the gateway's two newer wire formats: one server
 * fed only by the Anthropic-SDK variant of the task (`/v1/messages`), another only by the
 * OpenAI Responses variant (`/v1/responses`), both from examples/tasks/item-color/
 * sdk-variants.ts under the client SDK's episode runner, over real HTTP. Each server must
 * take its optimizer steps on samples built from those calls alone.
 */
const servers: SwarmServer[] = [];
let directory: { path: string; remove(): Promise<void> } | undefined;
const maxSteps = 3;

afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
  await directory?.remove();
});

async function trainingServer(name: string): Promise<SwarmServer> {
  const config = parseSwarmConfig(
    [
      "port: 0",
      "model: { kind: embedded, seed: 3 }",
      "train_batch_size: 2",
      "num_repeat: 2",
      "swarm_mode_sample_collection_method: rollout_until_finish_enough_episodes",
      "sampling: { temperature: 1, top_p: 1, max_tokens: 4 }",
      "save_freq: 0",
      `max_steps: ${maxSteps}`,
      `experiment_dir: ./${name}`,
    ].join("\n"),
    { baseDirectory: directory!.path },
  );
  const server = await startSwarmServer({ config, logger: silentLogger });
  servers.push(server);
  await waitForState(new SwarmClient({ url: server.url }), "ENGINE.ROLLING");
  return server;
}

describe("item-color trained by an Anthropic-SDK client and by an OpenAI Responses client", () => {
  it("each server takes its steps on samples from its own client's calls", async () => {
    directory = await temporaryDirectory("swarm-sdk-training");
    const [anthropicServer, responsesServer] = await Promise.all([trainingServer("anthropic"), trainingServer("responses")]);
    const runs = (
      [
        [itemColorOverAnthropic, anthropicServer],
        [itemColorOverResponses, responsesServer],
      ] as const
    ).map(([task, server]) =>
      // Far more episodes than the steps need: the runner stops when the server says training has finished.
      runEpisodes({
        client: new SwarmClient({ url: server.url, backoff: { initialMs: 20, maxMs: 100 } }),
        task,
        episodes: 400,
        concurrency: 4,
        numRepeat: 2,
        seed: 1,
      }),
    );
    const summaries = await Promise.all(runs);
    for (const [index, server] of [anthropicServer, responsesServer].entries()) {
      const summary = summaries[index]!;
      expect(summary.stoppedEarly).toContain("training has finished");
      expect(summary.outcomes.filter((outcome) => !outcome.ok).map((outcome) => outcome.error)).toEqual([]);
      expect(summary.completed).toBeGreaterThanOrEqual(maxSteps * 4);
      const client = new SwarmClient({ url: server.url });
      const metrics = await waitFor("the last step's metrics", async () => {
        const all = await client.metrics();
        return all.length >= maxSteps ? all : undefined;
      });
      expect(metrics.map((step) => step.step)).toEqual([1, 2, 3]);
      for (const step of metrics) {
        expect(step.step_failed).toBeUndefined();
        expect(step.episodes).toBeGreaterThanOrEqual(4);
        expect(step.samples).toBeGreaterThanOrEqual(4);
        expect(step.tokens).toBeGreaterThan(0);
        expect(Number.isFinite(step.loss)).toBe(true);
      }
      expect((await client.status()).global_step).toBe(maxSteps);
      // The calls really came in each SDK's own format (the last request body, as AgentJet's
      // replay endpoint shows it to its owner or the admin).
      const latest = server.coordinator.latestCall as { input: Record<string, unknown> };
      expect(Object.keys(latest.input)).toEqual(expect.arrayContaining(index === 0 ? ["system", "max_tokens", "messages"] : ["instructions", "input"]));
    }
  }, 90_000);
});
