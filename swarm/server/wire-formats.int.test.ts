import Anthropic from "@anthropic-ai/sdk";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SwarmClient, type EpisodeHandle } from "../client/index.ts";
import { parseSwarmConfig } from "../config/config.ts";
import { mergeTimelines } from "../tracking/index.ts";
import { silentLogger } from "./logger.ts";
import { rawRequest, temporaryDirectory, waitForState } from "./server-process.test-support.ts";
import { startSwarmServer, type SwarmServer } from "./swarm-server.ts";

/**
 * The gateway's Anthropic Messages and OpenAI Responses endpoints, through the real SDKs
 * over HTTP against the real server: plain and streaming, the episode key as x-api-key or
 * Bearer, calls of one episode through three formats merging into one timeline, the
 * train_sampling and default_system_message settings, and tool calls end to end. The
 * embedded policy never writes tool calls, so the tool-call tests put the server's
 * openai-compatible engine in front of a small upstream that answers in the Hermes format.
 */
const adminToken = "admin-token-for-wire-tests";
let directory: { path: string; remove(): Promise<void> };
let server: SwarmServer;
let admin: SwarmClient;

beforeAll(async () => {
  directory = await temporaryDirectory("swarm-wire");
  const config = parseSwarmConfig(
    [
      "port: 0",
      "train_batch_size: 1000", // never trains during these tests
      "num_repeat: 2",
      "sampling: { temperature: 1, top_p: 1, max_tokens: 6 }",
      "default_system_message: You are the policy under training.",
    ].join("\n"),
    { baseDirectory: directory.path },
  );
  server = await startSwarmServer({ config, adminToken, logger: silentLogger });
  admin = new SwarmClient({ url: server.url, adminToken });
  await waitForState(admin, "ENGINE.ROLLING");
});

afterAll(async () => {
  await server?.close();
  await Promise.all(extraServers.map((started) => started.close()));
  await new Promise((resolve) => (upstream ? upstream.close(resolve) : resolve(undefined)));
  await directory?.remove();
});

function anthropicFor(episode: EpisodeHandle, auth: "x-api-key" | "bearer" = "x-api-key"): Anthropic {
  const baseURL = episode.baseUrl.replace(/\/v1$/, "");
  return auth === "x-api-key"
    ? new Anthropic({ baseURL, apiKey: episode.apiKey, maxRetries: 0 })
    : new Anthropic({ baseURL, authToken: episode.apiKey, apiKey: null, maxRetries: 0 });
}

function recordedCalls(target: SwarmServer, episode: EpisodeHandle) {
  return target.coordinator.registry.running(episode.episodeUuid)!.calls;
}

describe("Anthropic's POST /v1/messages", () => {
  it("answers the Anthropic SDK with the episode's key as x-api-key or Bearer, records the call, and refuses a revoked key", async () => {
    const client = new SwarmClient({ url: server.url, adminToken });
    const episode = await client.beginEpisode();
    const message = await anthropicFor(episode).messages.create({
      model: "claude-anything",
      max_tokens: 4,
      system: "You name colours.",
      messages: [{ role: "user", content: [{ type: "text", text: "What colour is the sky?" }] }],
    });
    expect(message).toMatchObject({ type: "message", role: "assistant", model: "claude-anything", stop_sequence: null });
    expect(["end_turn", "max_tokens"]).toContain(message.stop_reason);
    expect(message.content).toEqual([{ type: "text", text: expect.any(String) }]);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBeLessThanOrEqual(4);

    const viaBearer = await anthropicFor(episode, "bearer").messages.create({ model: "m", max_tokens: 2, messages: [{ role: "user", content: "hi" }] });
    expect(viaBearer.type).toBe("message");
    const calls = recordedCalls(server, episode);
    expect(calls.map((call) => call.messages)).toEqual([
      [
        { role: "system", content: "You name colours." },
        { role: "user", content: "What colour is the sky?" },
      ],
      // No system prompt: the configured default_system_message is inserted.
      [
        { role: "system", content: "You are the policy under training." },
        { role: "user", content: "hi" },
      ],
    ]);
    expect(calls[0]!.completionText).toBe((message.content[0] as { text: string }).text);

    // Claude Code asks for token counts: the engine's tokenizer answers, and nothing is recorded.
    const counted = await anthropicFor(episode).messages.countTokens({
      model: "m",
      system: "You name colours.",
      messages: [{ role: "user", content: "What colour is the sky?" }],
    });
    expect(counted.input_tokens).toBe(calls[0]!.promptTokenIds.length);
    expect(recordedCalls(server, episode).length).toBe(2);

    await client.endEpisode("sky", episode.episodeUuid, { reward: 1 });
    const error = await anthropicFor(episode)
      .messages.create({ model: "m", max_tokens: 2, messages: [{ role: "user", content: "again" }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((error as Error).message).toContain("revoked");
  });

  it("streams Anthropic's event sequence, which the SDK's stream helper assembles into the message", async () => {
    const client = new SwarmClient({ url: server.url, adminToken });
    const episode = await client.beginEpisode();
    const anthropic = anthropicFor(episode);
    const stream = await anthropic.messages.create({
      model: "m",
      max_tokens: 6,
      messages: [{ role: "user", content: "What colour is the snow?" }],
      stream: true,
    });
    const types: string[] = [];
    let text = "";
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "content_block_delta" && event.delta.type === "text_delta") text += event.delta.text;
    }
    expect(types[0]).toBe("message_start");
    expect(types[1]).toBe("content_block_start");
    expect(types.slice(-3)).toEqual(["content_block_stop", "message_delta", "message_stop"]);
    expect(types.filter((type) => type === "content_block_delta").length).toBeGreaterThan(0);
    expect(text).toBe(recordedCalls(server, episode)[0]!.completionText);

    const final = await anthropic.messages.stream({ model: "m", max_tokens: 6, messages: [{ role: "user", content: "And the coal?" }] }).finalMessage();
    expect(final.content[0]).toEqual({ type: "text", text: recordedCalls(server, episode)[1]!.completionText });
    expect(final.usage.output_tokens).toBe(recordedCalls(server, episode)[1]!.completionTokenIds.length);
    await client.abortEpisode(episode.episodeUuid);
  });

  it("answers bad input in Anthropic's error shape, naming the field", async () => {
    const client = new SwarmClient({ url: server.url, adminToken });
    const episode = await client.beginEpisode();
    const bad = await rawRequest(`${server.url}/v1/messages`, {
      headers: { "x-api-key": episode.apiKey },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ type: "error", error: { type: "invalid_request_error", message: expect.stringContaining('"max_tokens"') } });
    const unauthenticated = await rawRequest(`${server.url}/v1/messages`, {
      body: JSON.stringify({ max_tokens: 1, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.body).toMatchObject({ type: "error", error: { type: "authentication_error", message: expect.stringContaining("x-api-key") } });
    expect(recordedCalls(server, episode)).toEqual([]);
    await client.abortEpisode(episode.episodeUuid);
  });
});

describe("OpenAI's POST /v1/responses", () => {
  it("answers client.responses.create, plain and streaming, with the episode's key", async () => {
    const client = new SwarmClient({ url: server.url, adminToken });
    const episode = await client.beginEpisode();
    const openai = new OpenAI({ baseURL: episode.baseUrl, apiKey: episode.apiKey, maxRetries: 0 });
    const response = await openai.responses.create({
      model: "gpt-anything",
      instructions: "You name colours.",
      input: "What colour is the grass?",
      max_output_tokens: 4,
    });
    expect(response).toMatchObject({ object: "response", model: "gpt-anything", error: null });
    expect(["completed", "incomplete"]).toContain(response.status);
    expect(response.output_text).toBe(recordedCalls(server, episode)[0]!.completionText);
    expect(response.usage!.output_tokens).toBeLessThanOrEqual(4);
    expect(recordedCalls(server, episode)[0]!.messages).toEqual([
      { role: "system", content: "You name colours." },
      { role: "user", content: "What colour is the grass?" },
    ]);

    const stream = await openai.responses.create({ model: "m", input: [{ role: "user", content: "And the milk?" }], stream: true });
    const types: string[] = [];
    let deltas = "";
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.output_text.delta") deltas += event.delta;
      if (event.type === "response.completed" || event.type === "response.incomplete") completed = event.response;
    }
    expect(types.slice(0, 4)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    expect(types).toContain("response.output_text.done");
    expect(["response.completed", "response.incomplete"]).toContain(types.at(-1));
    expect(deltas).toBe(recordedCalls(server, episode)[1]!.completionText);
    expect(completed!.output[0]).toMatchObject({ type: "message", content: [{ type: "output_text", text: deltas }] });
    await client.abortEpisode(episode.episodeUuid);
  });

  it("refuses previous_response_id with the fix", async () => {
    const client = new SwarmClient({ url: server.url, adminToken });
    const episode = await client.beginEpisode();
    const openai = new OpenAI({ baseURL: episode.baseUrl, apiKey: episode.apiKey, maxRetries: 0 });
    const error = await openai.responses.create({ model: "m", input: "hi", previous_response_id: "resp_1" }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toContain("send the whole conversation in input");
    await client.abortEpisode(episode.episodeUuid);
  });
});

describe("one episode through three formats, and the sampling policy", () => {
  it("records the same conversation whatever the format, so the turns merge into one timeline", async () => {
    const client = new SwarmClient({ url: server.url, adminToken });
    const episode = await client.beginEpisode();
    const system = "You walk a compass.";
    const first = await anthropicFor(episode).messages.create({ model: "m", max_tokens: 3, system, messages: [{ role: "user", content: "Face north." }] });
    const firstText = first.content.map((block) => (block.type === "text" ? block.text : "")).join("");
    const openai = new OpenAI({ baseURL: episode.baseUrl, apiKey: episode.apiKey, maxRetries: 0 });
    const second = await openai.responses.create({
      model: "m",
      instructions: system,
      input: [
        { role: "user", content: "Face north." },
        { role: "assistant", content: firstText },
        { role: "user", content: "Turn right." },
      ],
      max_output_tokens: 3,
    });
    await openai.chat.completions.create({
      model: "m",
      max_tokens: 3,
      messages: [
        { role: "system", content: system },
        { role: "user", content: "Face north." },
        { role: "assistant", content: firstText },
        { role: "user", content: "Turn right." },
        { role: "assistant", content: second.output_text },
        { role: "user", content: "Turn right again." },
      ],
    });
    const calls = recordedCalls(server, episode);
    expect(calls.length).toBe(3);
    for (const compareLevel of ["text", "token"] as const) {
      expect(mergeTimelines(calls, { compareLevel }).map((timeline) => timeline.calls.map((call) => call.callIndex))).toEqual([[0, 1, 2]]);
    }
    await client.abortEpisode(episode.episodeUuid);
  });

  it("on train episodes uses the server's temperature and says so (train_sampling: server); eval episodes honour the client", async () => {
    const client = new SwarmClient({ url: server.url, adminToken });
    for (const type of ["train", "eval"] as const) {
      const episode = await client.beginEpisode({ type });
      const headers = { "x-api-key": episode.apiKey };
      const messages = await rawRequest(`${server.url}/v1/messages`, {
        headers,
        body: JSON.stringify({ max_tokens: 2, temperature: 0.3, messages: [{ role: "user", content: "hi" }] }),
      });
      const responses = await rawRequest(`${episode.baseUrl}/responses`, {
        headers,
        body: JSON.stringify({ input: "hi", top_p: 0.5, max_output_tokens: 2 }),
      });
      expect(messages.status).toBe(200);
      expect(responses.status).toBe(200);
      if (type === "train") {
        expect(messages.headers.get("x-swarm-warnings")).toContain(
          "temperature ignored on train episodes (train_sampling: server; temperature 1, top_p 1 apply)",
        );
        expect(responses.headers.get("x-swarm-warnings")).toContain("top_p ignored on train episodes");
      } else {
        expect(messages.headers.get("x-swarm-warnings") ?? "").not.toContain("train_sampling");
        expect(responses.headers.get("x-swarm-warnings") ?? "").not.toContain("train_sampling");
      }
      await client.abortEpisode(episode.episodeUuid);
    }
  });
});

// --- tool calls, with an upstream that writes them --------------------------------------

/** What the upstream answers: a tool call while the last message is the user's, then text. */
const writtenCall = 'Checking.\n<tool_call>\n{"name": "lookup",  "arguments": {"item": "sky"}}\n</tool_call>';
let upstream: Server | undefined;
let toolServer: SwarmServer | undefined;
const extraServers: SwarmServer[] = [];
const upstreamRequests: Array<{ messages: Array<{ role: string; content: string }>; tools?: unknown[]; temperature?: number; top_p?: number }> = [];

async function startUpstream(): Promise<number> {
  upstream = createServer((request, response) => {
    let text = "";
    request.on("data", (chunk: Buffer) => (text += chunk.toString()));
    request.on("end", () => {
      if (request.method === "GET") {
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify({ object: "list", data: [{ id: "tool-writer", object: "model" }] }));
        return;
      }
      const body = JSON.parse(text) as (typeof upstreamRequests)[number];
      upstreamRequests.push(body);
      const content = body.tools && body.messages.at(-1)?.role === "user" ? writtenCall : "It is blue.";
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify({ id: "x", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }] }),
      );
    });
  });
  await new Promise<void>((resolve) => upstream!.listen(0, "127.0.0.1", resolve));
  return (upstream.address() as AddressInfo).port;
}

let upstreamPort: Promise<number> | undefined;

/** A swarm server whose openai-compatible engine asks the upstream (one upstream for all). */
async function startToolServer(extraConfig: string[] = []): Promise<SwarmServer> {
  upstreamPort ??= startUpstream();
  const port = await upstreamPort;
  const config = parseSwarmConfig(
    [
      "port: 0",
      "train_batch_size: 1000",
      "model:",
      "  kind: openai-compatible",
      `  base_url: http://127.0.0.1:${port}/v1`,
      "  model: tool-writer",
      // The upstream answers text only, as any OpenAI server: the word tokenizer stands in.
      "  tokenizer: word",
      ...extraConfig,
    ].join("\n"),
    { baseDirectory: directory.path },
  );
  const started = await startSwarmServer({ config, adminToken, logger: silentLogger });
  extraServers.push(started);
  await waitForState(new SwarmClient({ url: started.url, adminToken }), "ENGINE.ROLLING");
  return started;
}

const lookupSchema = { type: "object" as const, properties: { item: { type: "string" } }, required: ["item"] };

describe("tool calls in the policy's answer", () => {
  it("come back as tool_use blocks (Anthropic), function_call items (Responses) and tool_calls (chat), and replayed turns merge", async () => {
    toolServer ??= await startToolServer();
    const client = new SwarmClient({ url: toolServer.url, adminToken });

    // Anthropic, streaming through the SDK's helper: the tool_use block's input is assembled from input_json_delta.
    const episode = await client.beginEpisode();
    const anthropic = anthropicFor(episode);
    const tools = [{ name: "lookup", description: "the colour of an item", input_schema: lookupSchema }];
    const question = { role: "user" as const, content: "What colour is the sky?" };
    const first = await anthropic.messages.stream({ model: "m", max_tokens: 64, tools, messages: [question] }).finalMessage();
    expect(first.stop_reason).toBe("tool_use");
    expect(first.content).toEqual([
      { type: "text", text: "Checking." },
      { type: "tool_use", id: expect.stringMatching(/^toolu_/), name: "lookup", input: { item: "sky" } },
    ]);
    const use = first.content[1] as Anthropic.ToolUseBlock;
    const second = await anthropic.messages.create({
      model: "m",
      max_tokens: 64,
      tools,
      messages: [
        question,
        { role: "assistant", content: first.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "blue" }] },
      ],
    });
    expect(second.content).toEqual([{ type: "text", text: "It is blue." }]);
    expect(second.stop_reason).toBe("end_turn");
    // The replayed turn is what the policy wrote, byte for byte (spacing included), upstream and in the record.
    expect(upstreamRequests.at(-1)!.messages.slice(-2)).toEqual([
      { role: "assistant", content: writtenCall },
      { role: "tool", content: "blue", tool_call_id: use.id },
    ]);
    const calls = recordedCalls(toolServer, episode);
    expect(calls[1]!.messages[1]).toEqual({ role: "assistant", content: writtenCall });
    expect(calls[0]!.tools).toEqual([{ type: "function", function: { name: "lookup", description: "the colour of an item", parameters: lookupSchema } }]);
    expect(mergeTimelines(calls, { compareLevel: "text" }).length).toBe(1);
    expect(mergeTimelines(calls, { compareLevel: "token" }).length).toBe(1);
    await client.abortEpisode(episode.episodeUuid);

    // Responses, plain and streaming.
    const responsesEpisode = await client.beginEpisode();
    const openai = new OpenAI({ baseURL: responsesEpisode.baseUrl, apiKey: responsesEpisode.apiKey, maxRetries: 0 });
    const functionTools = [{ type: "function" as const, name: "lookup", description: "the colour of an item", parameters: lookupSchema, strict: true }];
    const response = await openai.responses.create({ model: "m", tools: functionTools, input: "What colour is the sky?" });
    expect(response.output).toEqual([
      expect.objectContaining({ type: "message", content: [expect.objectContaining({ type: "output_text", text: "Checking." })] }),
      expect.objectContaining({ type: "function_call", name: "lookup", arguments: '{"item":"sky"}', call_id: expect.stringMatching(/^call_/) }),
    ]);
    const call = response.output[1] as OpenAI.Responses.ResponseFunctionToolCall;
    const stream = await openai.responses.create({ model: "m", tools: functionTools, input: "What colour is the sky?", stream: true });
    const argumentDeltas: string[] = [];
    for await (const event of stream) if (event.type === "response.function_call_arguments.delta") argumentDeltas.push(event.delta);
    expect(argumentDeltas.join("")).toBe('{"item":"sky"}');
    const followUp = await openai.responses.create({
      model: "m",
      tools: functionTools,
      input: [
        { role: "user", content: "What colour is the sky?" },
        ...response.output.map((item) => item as OpenAI.Responses.ResponseInputItem),
        { type: "function_call_output", call_id: call.call_id, output: "blue" },
      ],
    });
    expect(followUp.output_text).toBe("It is blue.");
    const responseCalls = recordedCalls(toolServer, responsesEpisode);
    expect(responseCalls[2]!.messages.slice(1, 3)).toEqual([
      { role: "assistant", content: writtenCall },
      { role: "tool", content: "blue", tool_call_id: call.call_id },
    ]);
    expect(mergeTimelines(responseCalls, { compareLevel: "text" }).map((timeline) => [...timeline.calls, ...timeline.duplicates].length)).toEqual([3]);
    await client.abortEpisode(responsesEpisode.episodeUuid);

    // Chat completions.
    const chatEpisode = await client.beginEpisode();
    const chat = new OpenAI({ baseURL: chatEpisode.baseUrl, apiKey: chatEpisode.apiKey, maxRetries: 0 });
    const chatTools = [{ type: "function" as const, function: { name: "lookup", parameters: lookupSchema } }];
    const completion = await chat.chat.completions.create({ model: "m", tools: chatTools, messages: [question] });
    expect(completion.choices[0]!.finish_reason).toBe("tool_calls");
    expect(completion.choices[0]!.message).toMatchObject({
      content: "Checking.",
      tool_calls: [{ type: "function", function: { name: "lookup", arguments: '{"item":"sky"}' }, id: expect.stringMatching(/^call_/) }],
    });
    const toolCall = completion.choices[0]!.message.tool_calls![0]!;
    await chat.chat.completions.create({
      model: "m",
      tools: chatTools,
      messages: [question, completion.choices[0]!.message, { role: "tool", tool_call_id: toolCall.id, content: "blue" }],
    });
    expect(recordedCalls(toolServer, chatEpisode)[1]!.messages[1]).toEqual({ role: "assistant", content: writtenCall });
    // Without tools offered, the same text is an answer, not a tool call.
    const plain = await chat.chat.completions.create({ model: "m", messages: [question] });
    expect(plain.choices[0]!.message.tool_calls).toBeUndefined();
    await client.abortEpisode(chatEpisode.episodeUuid);
  });

  it("reach the engine with the server's sampling on train episodes and the client's on eval episodes, or the client's on both with train_sampling: client", async () => {
    toolServer ??= await startToolServer();
    const clientSampling = await startToolServer(["train_sampling: client"]);
    const sent: Record<string, { temperature?: number; top_p?: number }> = {};
    for (const [name, target] of [
      ["server", toolServer],
      ["client", clientSampling],
    ] as const) {
      const client = new SwarmClient({ url: target.url, adminToken });
      for (const type of ["train", "eval"] as const) {
        const episode = await client.beginEpisode({ type });
        // This SDK's typings no longer list temperature and top_p; the wire format (and older agents) still send them.
        const withSampling = { model: "m", max_tokens: 8, temperature: 0.25, top_p: 0.5, messages: [{ role: "user" as const, content: "hi" }] };
        await anthropicFor(episode).messages.create(withSampling);
        const { temperature, top_p } = upstreamRequests.at(-1)!;
        sent[`${name} ${type}`] = { temperature, top_p };
        await client.abortEpisode(episode.episodeUuid);
      }
    }
    expect(sent).toEqual({
      "server train": { temperature: 1, top_p: 1 },
      "server eval": { temperature: 0.25, top_p: 0.5 },
      "client train": { temperature: 0.25, top_p: 0.5 },
      "client eval": { temperature: 0.25, top_p: 0.5 },
    });
  });
});
