import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SwarmClient } from "../swarm/client/index.ts";
import { parseSwarmConfig } from "../swarm/config/config.ts";
import { silentLogger } from "../swarm/server/logger.ts";
import { startSwarmServer, type SwarmServer } from "../swarm/server/swarm-server.ts";
import { slowTests, slowTierNote } from "../test-support/slow-tests.ts";
import { startServerProcess, temporaryDirectory, waitFor, waitForState, type ServerProcess } from "../swarm/server/server-process.test-support.ts";
import { runA3r } from "../test-support/run-cli.ts";

/**
 * An AgentJet job's YAML, unchanged, on `a3r swarm check` and `a3r swarm serve --config`:
 * the merge policy it inherits from AgentJet's defaults (text, ignore_tools) and its length
 * limits are in force on the running server, seen from outside as AgentJet's client sees them.
 */
const fixtures = join(import.meta.dirname, "..", "swarm", "config", "__fixtures__", "agentjet");

// A job as an AgentJet user writes it: nothing of a3r's in it (the port comes from --port 0).
const job = `
ajet:
  project_name: tiny
  experiment_name: tiny-run
  experiment_dir: auto
  model: { path: Qwen/Qwen2.5-0.5B-Instruct }
  rollout:
    user_workflow: my.workflow->Tiny
    num_repeat: 1
    max_response_length_in_one_turn: 3
    max_model_len: 60
  data: { train_batch_size: 1, max_prompt_length: 20, max_response_length: 30 }
  trainer_common: { total_training_steps: 2, save_freq: 0 }
defaults: [verl_default, ajet_default, _self_]
`;

let server: ServerProcess | undefined;
let inProcess: SwarmServer | undefined;
let directory: { path: string; remove(): Promise<void> } | undefined;
afterAll(async () => {
  await server?.kill();
  await inProcess?.close();
  await directory?.remove();
});

const words = (count: number, word: string): string => Array.from({ length: count }, () => word).join(" ");

async function chat(handle: { baseUrl: string; apiKey: string }, body: Record<string, unknown>) {
  const response = await fetch(`${handle.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${handle.apiKey}` },
    body: JSON.stringify({ model: "policy", ...body }),
  });
  expect(response.status).toBe(200);
  const answer = (await response.json()) as { choices: Array<{ message: { content: string } }>; usage: { completion_tokens: number } };
  return {
    content: answer.choices[0]!.message.content,
    completionTokens: answer.usage.completion_tokens,
    warnings: response.headers.get("x-swarm-warnings") ?? "",
  };
}

/** Two steps of the job as AgentJet's client would drive them, checking what the YAML put in force. */
async function driveJob(url: string): Promise<void> {
  const client = new SwarmClient({ url });
  await waitForState(client, "ENGINE.ROLLING");
  // Step 1: two calls offered different tools; AgentJet's default ignore_tools merges them
  // (a3r's own default would keep two samples), and the sample is cut to 20 + 30 tokens.
  const first = await client.beginEpisode();
  const system = { role: "system", content: "s" };
  const user = { role: "user", content: words(25, "blue") };
  const asked = await chat(first, {
    messages: [system, user],
    max_tokens: 100,
    tools: [{ type: "function", function: { name: "a", parameters: { type: "object" } } }],
  });
  // max_response_length_in_one_turn caps the answer whatever the request asks.
  expect(asked.completionTokens).toBeLessThanOrEqual(3);
  await chat(first, {
    messages: [system, user, { role: "assistant", content: asked.content }, { role: "user", content: words(18, "red") }],
    tools: [{ type: "function", function: { name: "b", parameters: { type: "object" } } }],
  });
  await client.endEpisode("t1", first.episodeUuid, { reward: 1 });
  const [step1] = await waitFor("step 1", async () => ((await client.metrics()).length >= 1 ? client.metrics() : undefined));
  expect(step1).toMatchObject({ samples: 1, tokens: 50 });

  // Step 2: a prompt that leaves no room under max_model_len gets AgentJet's overflow answer and is not trained on.
  const second = await client.beginEpisode();
  const overflow = await chat(second, { messages: [{ role: "user", content: words(70, "green") }] });
  expect(overflow.content).toBe("ajet_proxy: Exceeded max model context length.");
  expect(overflow.warnings).toContain("limits.max_model_len 60");
  await chat(second, { messages: [{ role: "user", content: "green" }] });
  await client.endEpisode("t2", second.episodeUuid, { reward: 0 });
  const metrics = await waitFor("step 2", async () => {
    const all = await client.metrics();
    return all.length >= 2 ? all : undefined;
  });
  expect(metrics[1]).toMatchObject({ samples: 1 });
  expect(metrics[1]!.tokens).toBeLessThan(10);
  // total_training_steps: 2.
  await waitFor("finished", async () => ((await client.status()).engine_status === "ENGINE.OFFLINE" ? true : undefined));
}

describe("an AgentJet job's YAML on a3r swarm", () => {
  it("runs unchanged with its merge settings and length limits in force (the config loader serve uses, in process)", async () => {
    directory ??= await temporaryDirectory("agentjet-job");
    const folder = join(directory.path, "in-process");
    await mkdir(folder);
    const config = parseSwarmConfig(job, { file: join(folder, "job.yaml"), baseDirectory: folder });
    expect(config).toMatchObject({ compare_level: "text", ignore_tools: true, experiment_dir: join(folder, "swarm-experiment", "tiny-run") });
    inProcess = await startSwarmServer({ config: { ...config, port: 0 }, logger: silentLogger });
    await driveJob(inProcess.url);
    expect(existsSync(join(folder, "swarm-experiment", "tiny-run", "metrics.jsonl"))).toBe(true);
  }, 60_000);

  it.skipIf(!slowTests)(
    `swarm check accepts AgentJet's tutorial configs, and swarm serve --config runs the job's YAML unchanged${slowTierNote}`,
    async () => {
      const checked = await runA3r(["swarm", "check", "--config", join(fixtures, "werewolves.yaml")]);
      expect(checked.code).toBe(0);
      expect(checked.stdout).toContain("werewolves.yaml: ok (AgentJet's form)");
      expect(checked.stdout).toContain('mapped: compare_level ← ajet.context_tracker.timeline_merging_policy.timeline_compare_level = "token"');
      expect(checked.stdout).toContain("ignored: ajet.rollout.user_workflow: the client runs the workflow");
      directory ??= await temporaryDirectory("agentjet-job");
      const folder = join(directory.path, "served");
      await mkdir(folder);
      server = await startServerProcess(folder, job);
      // The serve log says what each key became, AgentJet's defaults included.
      expect(server.output()).toContain(
        `agentjet: mapped: compare_level ← ajet.context_tracker.timeline_merging_policy.timeline_compare_level = "text" (AgentJet's default)`,
      );
      await driveJob(server.url);
      expect(existsSync(join(folder, "swarm-experiment", "tiny-run", "metrics.jsonl"))).toBe(true);
    },
    120_000,
  );
});
