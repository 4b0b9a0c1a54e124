import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import type { ChatMessage, GenerateResult } from "../engines/engine.ts";
import { HttpError, bearerToken, parseBody, readBody, sendJson } from "./http-tools.ts";
import type { SwarmLogger } from "./logger.ts";
import type { TrainingCoordinator } from "./training-coordinator.ts";

/**
 * The OpenAI-compatible gateway: `/v1/chat/completions` (plain and `stream: true`) and
 * `/v1/models`, authenticated by the episode's key. Every completion is recorded on its
 * episode as a RecordedCall (swarm/tracking turns them into samples at end_episode).
 *
 * Fields the engine cannot honour are ignored, never rejected: their names come back in
 * the `x-swarm-warnings` header and are logged once per name. Not supported: n > 1 (one
 * choice is returned), tool calls in the answer (the policy only writes text), logprobs in
 * the answer. A multi-agent client may name its agent with the `x-swarm-agent-name` header
 * (calls of different agents never merge).
 */

const contentPartSchema = z.looseObject({ type: z.string(), text: z.string().optional() });
const messageSchema = z.looseObject({
  role: z.enum(["system", "developer", "user", "assistant", "tool"]),
  content: z.union([z.string(), z.array(contentPartSchema), z.null()]).optional(),
  name: z.string().optional(),
  tool_call_id: z.string().optional(),
});
const positiveTokens = z.number().int().positive().nullable().optional();
const chatRequestSchema = z.looseObject({
  model: z.string().optional(),
  messages: z.array(messageSchema).min(1, "give at least one message"),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  max_tokens: positiveTokens,
  max_completion_tokens: positiveTokens,
  stop: z
    .union([z.string(), z.array(z.string())])
    .nullable()
    .optional(),
  seed: z.number().int().nullable().optional(),
  tools: z.array(z.unknown()).nullable().optional(),
  n: z.number().int().positive().nullable().optional(),
});
type ChatRequest = z.output<typeof chatRequestSchema>;

const honouredFields = new Set([
  "model",
  "messages",
  "stream",
  "stream_options",
  "temperature",
  "top_p",
  "max_tokens",
  "max_completion_tokens",
  "stop",
  "seed",
  "tools",
  "n",
]);
/** A hard ceiling so one request cannot ask for unbounded generation. */
const maxTokensCeiling = 8192;
const idPrefix = randomBytes(6).toString("hex");
let idCounter = 0;

export class Gateway {
  readonly #warnedFields = new Set<string>();

  constructor(
    private readonly coordinator: TrainingCoordinator,
    private readonly logger: SwarmLogger,
  ) {}

  modelName(): string {
    const model = this.coordinator.config.model;
    return model.kind === "openai-compatible" ? model.model : "a3r-embedded-policy";
  }

  models(request: IncomingMessage, response: ServerResponse): void {
    this.#episodeOf(request);
    sendJson(response, 200, { object: "list", data: [{ id: this.modelName(), object: "model", created: 0, owned_by: "a3r-swarm" }] });
  }

  async chatCompletions(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const episode = this.#episodeOf(request);
    const { config } = this.coordinator;
    const text = await readBody(request, config.limits.max_request_body_bytes);
    episode.receivedBytes += text.length;
    if (episode.receivedBytes > config.limits.max_episode_bytes) {
      throw new HttpError(
        413,
        `episode ${episode.episodeUuid} has sent more than limits.max_episode_bytes (${config.limits.max_episode_bytes}) in requests; end it`,
      );
    }
    const body = parseBody(text, chatRequestSchema, "chat/completions");
    if (body.messages.length > config.limits.max_messages_per_request) {
      throw new HttpError(400, `${body.messages.length} messages exceed limits.max_messages_per_request (${config.limits.max_messages_per_request})`);
    }
    if (episode.calls.length >= config.limits.max_episode_calls) {
      throw new HttpError(400, `episode ${episode.episodeUuid} has made limits.max_episode_calls (${config.limits.max_episode_calls}) calls; end it`);
    }
    const engine = this.coordinator.engine;
    if (!engine) throw new HttpError(503, "no engine is loaded");
    const warnings = this.#ignoredFields(body);
    const messages = body.messages.map(toChatMessage);
    const controller = new AbortController();
    response.on("close", () => {
      if (!response.writableFinished) controller.abort();
    });
    episode.inFlight += 1;
    this.coordinator.registry.touch(episode);
    this.coordinator.clients.seen(episode.clientUuid);
    let result: GenerateResult;
    try {
      result = await engine.generate({
        messages,
        ...(body.tools ? { tools: body.tools } : {}),
        temperature: body.temperature ?? config.sampling.temperature,
        topP: body.top_p ?? config.sampling.top_p,
        maxTokens: Math.min(body.max_completion_tokens ?? body.max_tokens ?? config.sampling.max_tokens, maxTokensCeiling),
        ...(body.stop ? { stop: typeof body.stop === "string" ? [body.stop] : body.stop } : {}),
        ...(typeof body.seed === "number" ? { seed: body.seed } : {}),
        signal: controller.signal,
      });
    } finally {
      episode.inFlight -= 1;
      this.coordinator.registry.touch(episode);
    }
    if (controller.signal.aborted) return;
    if (episode.status !== "running") {
      throw new HttpError(
        401,
        `episode ${episode.episodeUuid} was ${episode.status} while this completion was generated (${episode.closeReason ?? ""}); the completion is dropped`,
      );
    }
    const agentName = request.headers["x-swarm-agent-name"];
    episode.calls.push({
      callIndex: episode.calls.length,
      ...(typeof agentName === "string" && agentName ? { agentName } : {}),
      messages,
      ...(body.tools ? { tools: body.tools } : {}),
      promptTokenIds: result.promptTokenIds,
      completionTokenIds: result.completionTokenIds,
      completionText: result.text,
      ...(result.completionLogprobs ? { completionLogprobs: result.completionLogprobs } : {}),
      time: Date.now(),
    });
    warnings.push(...(result.warnings ?? []));
    const headers: Record<string, string> = warnings.length > 0 ? { "x-swarm-warnings": warnings.join("; ") } : {};
    const answer = {
      id: `chatcmpl-${idPrefix}${(idCounter += 1)}`,
      created: Math.floor(Date.now() / 1000),
      model: body.model ?? this.modelName(),
    };
    const usage = {
      prompt_tokens: result.promptTokenIds.length,
      completion_tokens: result.completionTokenIds.length,
      total_tokens: result.promptTokenIds.length + result.completionTokenIds.length,
    };
    if (body.stream) {
      response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive", ...headers });
      response.end(streamOf(answer, result, body.stream_options?.include_usage ? usage : undefined));
      return;
    }
    sendJson(
      response,
      200,
      {
        ...answer,
        object: "chat.completion",
        choices: [{ index: 0, message: { role: "assistant", content: result.text, refusal: null }, logprobs: null, finish_reason: result.finishReason }],
        usage,
      },
      headers,
    );
  }

  #episodeOf(request: IncomingMessage) {
    const key = bearerToken(request);
    if (!key) throw new HttpError(401, "missing API key: send the openai_api_key of your claimed episode as a Bearer token");
    const episode = this.coordinator.registry.byApiKey(key);
    if (!episode)
      throw new HttpError(401, "invalid or revoked API key: its episode has ended, aborted, been reclaimed, or was never claimed; claim a new episode");
    return episode;
  }

  #ignoredFields(body: ChatRequest): string[] {
    // Field names are the client's text and go into a response header: printable ASCII
    // only, short, and few (a header with a newline would make writeHead throw).
    const ignored = Object.keys(body)
      .filter((key) => !honouredFields.has(key) && (body as Record<string, unknown>)[key] !== null)
      .map((key) => key.replace(/[^\x20-\x7e]/g, "?").slice(0, 64))
      .slice(0, 20);
    if (typeof body.n === "number" && body.n > 1) ignored.push("n (one choice is returned)");
    const fresh = ignored.filter((name) => !this.#warnedFields.has(name));
    if (fresh.length > 0) {
      // Logged once per name; the set is capped so a client inventing names cannot grow it.
      for (const name of fresh) if (this.#warnedFields.size < 1000) this.#warnedFields.add(name);
      this.logger.warn({ fields: fresh }, "chat/completions: ignoring sampling fields the engine cannot honour");
    }
    return ignored.length > 0 ? [`ignored unsupported fields: ${ignored.join(", ")}`] : [];
  }
}

function toChatMessage(message: z.output<typeof messageSchema>): ChatMessage {
  const content = typeof message.content === "string" ? message.content : (message.content ?? []).map((part) => part.text ?? "").join("");
  return {
    role: message.role === "developer" ? "system" : message.role,
    content,
    ...(message.name ? { name: message.name } : {}),
    ...(message.tool_call_id ? { tool_call_id: message.tool_call_id } : {}),
  };
}

/** The whole answer as server-sent events in OpenAI's chunk format, ending with [DONE]. */
function streamOf(answer: { id: string; created: number; model: string }, result: GenerateResult, usage: object | undefined): string {
  const chunk = (choices: unknown[], extra: object = {}): string =>
    `data: ${JSON.stringify({ ...answer, object: "chat.completion.chunk", choices, ...extra })}\n\n`;
  const events = [chunk([{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }])];
  for (const piece of result.text.match(/\s*\S+\s*/g) ?? (result.text ? [result.text] : [])) {
    events.push(chunk([{ index: 0, delta: { content: piece }, logprobs: null, finish_reason: null }]));
  }
  events.push(chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: result.finishReason }]));
  if (usage) events.push(chunk([], { usage }));
  events.push("data: [DONE]\n\n");
  return events.join("");
}
