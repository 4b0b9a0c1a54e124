import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { SwarmClient } from "../client/swarm-client.ts";
import { parseSwarmConfig, SwarmConfigError } from "../config/config.ts";
import { defaultEngineFactory } from "../server/engine-factory.ts";
import { silentLogger } from "../server/logger.ts";
import { temporaryDirectory, waitFor, waitForState } from "../server/server-process.test-support.ts";
import { startSwarmServer } from "../server/swarm-server.ts";
import type { ChatMessage, EncodedChat, Engine, GenerateResult } from "./port/engine.ts";
import { optimizerConfigSchema } from "./port/engine-config.ts";
import { defineEngineKind } from "./port/engine-kind.ts";
import { engineKindNames, registerEngineKind } from "./engine-registry.ts";

/**
 * A throwaway engine kind, declared the way a kind's folder declares one: its schema (with
 * the server-owned experiment_dir and optimizer) and its factory. It says one fixed reply.
 * Registering it is all it takes for swarm.yaml, the config errors and the server to know it.
 */
const echoConfigSchema = z.strictObject({
  kind: z.literal("echo"),
  reply: z.string().min(1),
  reply_prefix: z.string().default(""),
  optimizer: optimizerConfigSchema,
  experiment_dir: z.string().min(1),
});

class EchoEngine implements Engine {
  readonly kind = "echo";
  trainedSteps = 0;
  constructor(readonly config: z.output<typeof echoConfigSchema>) {}
  async load(): Promise<void> {}
  encodeChat(messages: ChatMessage[], options?: { addGenerationPrompt?: boolean }): EncodedChat {
    const tokenIds: number[] = [];
    const messageSpans = messages.map((message) => {
      const start = tokenIds.length;
      tokenIds.push(1, ...[...message.content].map((character) => character.charCodeAt(0)), 2);
      return { start, end: tokenIds.length };
    });
    if (options?.addGenerationPrompt) tokenIds.push(1);
    return { tokenIds, messageSpans };
  }
  async generate(request: { messages: ChatMessage[] }): Promise<GenerateResult> {
    const text = `${this.config.reply_prefix}${this.config.reply}`;
    return {
      text,
      finishReason: "stop",
      promptTokenIds: this.encodeChat(request.messages, { addGenerationPrompt: true }).tokenIds,
      completionTokenIds: [...text].map((character) => character.charCodeAt(0)),
    };
  }
  async train(): Promise<{ metrics: Record<string, number> }> {
    this.trainedSteps += 1;
    return { metrics: { loss: 0 } };
  }
  async save(directory: string, step: number): Promise<string> {
    return `${directory}/echo-${step}`;
  }
  async restore(): Promise<number> {
    return 0;
  }
  async close(): Promise<void> {}
}

const echoKind = defineEngineKind({
  kind: "echo",
  configSchema: echoConfigSchema,
  create: (config) => new EchoEngine(config),
  servedModelName: (model) => `echo-${model.reply}`,
});

// A configuration parsed before the kind is registered (as another test file may have done
// in this process) must not keep the kinds of that moment.
parseSwarmConfig("model:\n  kind: embedded\n", { baseDirectory: "/b" });
const unregister = registerEngineKind(echoKind);
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  unregister();
});

function errorOf(text: string): SwarmConfigError {
  try {
    parseSwarmConfig(text, { baseDirectory: "/b" });
  } catch (error) {
    if (error instanceof SwarmConfigError) return error;
    throw error;
  }
  throw new Error("expected the configuration to be rejected");
}

describe("a registered engine kind (a throwaway one)", () => {
  it("is parsed from swarm.yaml and created by the server's factory with the fields the server owns", async () => {
    const config = parseSwarmConfig("model:\n  kind: echo\n  reply: blue\noptimizer: { lr: 0.5 }\nexperiment_dir: /tmp/echo\n", { baseDirectory: "/b" });
    expect(config.model).toEqual({ kind: "echo", reply: "blue", reply_prefix: "" });
    const engine = (await defaultEngineFactory(config)) as EchoEngine;
    expect(engine).toBeInstanceOf(EchoEngine);
    expect(engine.config).toEqual({
      kind: "echo",
      reply: "blue",
      reply_prefix: "",
      experiment_dir: "/tmp/echo",
      optimizer: { lr: 0.5, kl_coef: 0.001, clip: 0.2 },
    });
  });

  it("gets the config errors and the old-spelling aliases every kind gets", () => {
    expect(engineKindNames()).toEqual(["embedded", "openai-compatible", "vllm", "echo"]);
    const unknown = errorOf("model:\n  kind: echo\n  reply: blue\n  replyy: x\n");
    expect(unknown.message).toBe('unknown key "model.replyy" — did you mean "reply"?');
    expect(unknown.line).toBe(4);
    expect(errorOf("model:\n  kind: echo\n").field).toBe("model.reply");
    expect(errorOf("model:\n  kind: nope\n").hint).toBe('use one of: "embedded", "openai-compatible", "vllm", "echo"');
    const deprecations: string[] = [];
    const config = parseSwarmConfig("model:\n  kind: echo\n  reply: blue\n  replyPrefix: 'the '\n", {
      file: "swarm.yaml",
      baseDirectory: "/b",
      onDeprecation: (line) => deprecations.push(line),
    });
    expect(config.model).toMatchObject({ reply_prefix: "the " });
    expect(deprecations).toEqual(['swarm.yaml:4: deprecated key "model.replyPrefix": write "model.reply_prefix" (the camelCase spelling still works for now)']);
  });

  it("serves episodes through the swarm server like any other kind", async () => {
    const directory = await temporaryDirectory("echo-kind");
    cleanups.push(() => directory.remove());
    const config = parseSwarmConfig("model:\n  kind: echo\n  reply: blue\nport: 0\ntrain_batch_size: 1\nnum_repeat: 1\nsave_freq: 0\n", {
      baseDirectory: directory.path,
    });
    const server = await startSwarmServer({ config, logger: silentLogger });
    cleanups.push(() => server.close());
    const client = new SwarmClient({ url: server.url });
    await waitForState(client, "ENGINE.ROLLING");
    const episode = await client.beginEpisode();
    const headers = { "content-type": "application/json", authorization: `Bearer ${episode.apiKey}` };
    const models = (await (await fetch(`${episode.baseUrl}/models`, { headers })).json()) as { data: Array<{ id: string }> };
    expect(models.data[0]!.id).toBe("echo-blue");
    const answer = await fetch(`${episode.baseUrl}/chat/completions`, {
      method: "POST",
      headers,
      body: JSON.stringify({ model: "echo-blue", messages: [{ role: "user", content: "What colour is the sky?" }] }),
    });
    const body = (await answer.json()) as { choices: Array<{ message: { content: string } }> };
    expect(body.choices[0]!.message.content).toBe("blue");
    await client.endEpisode("sky", episode.episodeUuid, { reward: 1 });
    // One episode is a full batch here: the kind's train() ran as the server's step.
    await waitFor("the first step", async () => ((await client.metrics()).length > 0 ? true : undefined));
  });
});
