import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { z } from "zod";
import type { GenerateResult } from "../engines/port/engine.ts";
import { engineKind } from "../engines/engine-registry.ts";
import type { Episode } from "./episode-registry.ts";
import { callMaxTokens, contextOverflow } from "./agentjet-config.ts";
import { HttpError, bearerToken, parseBody, readBody, sendJson } from "./wire/http-tools.ts";
import type { SwarmLogger } from "./logger.ts";
import { RequestRefused, type TrainingCoordinator } from "./training-coordinator.ts";
import {
  anthropicAnswer,
  anthropicCountTokensSchema,
  anthropicError,
  anthropicMessagesRequestSchema,
  anthropicStream,
  translateAnthropicRequest,
} from "./wire/anthropic-messages.ts";
import { chatAnswer, chatRequestSchema, chatStream, isPlainChatRequest, translateChatRequest } from "./wire/chat-completions.ts";
import { responsesAnswer, responsesRequestSchema, responsesStream, translateResponsesRequest } from "./wire/openai-responses.ts";
import { parseToolCalls, ToolCallReplays } from "./wire/tool-calls.ts";
import { withDefaultSystem, type GatewayAnswer, type TranslateRequest } from "./wire/wire-types.ts";

/**
 * The gateway for the policy, authenticated by the episode's key (a Bearer token, or
 * `x-api-key` as the Anthropic SDK sends it): OpenAI's `/v1/chat/completions` and
 * `/v1/responses`, Anthropic's `/v1/messages` (each plain and streaming) and
 * `/v1/messages/count_tokens`, and `/v1/models`.
 * Each format is translated to one internal conversation (server/wire/), and every answer
 * is recorded on its episode as a RecordedCall the same way whatever the format, so
 * swarm/tracking merges the calls of an agent that mixes them. Tool calls the policy writes
 * in its template's text format come back as the format's structured tool calls.
 *
 * Fields the engine cannot honour are ignored, never rejected: their names come back in
 * the `x-swarm-warnings` header and are logged once per name. On train episodes the
 * client's temperature and top_p give way to the server's `sampling` unless
 * `train_sampling: client`. Not supported: n > 1 (one choice is returned), logprobs in the
 * answer, stored responses. A multi-agent client may name its agent with the
 * `x-swarm-agent-name` header (calls of different agents never merge).
 */

/** A hard ceiling so one request cannot ask for unbounded generation. */
const maxTokensCeiling = 8192;
const idPrefix = randomBytes(6).toString("hex");
let idCounter = 0;

/** One wire format: how its body is validated and translated, and how its answer is written. */
interface WireFormat<Schema extends z.ZodType> {
  endpoint: string;
  schema: Schema;
  /** A hand check of `schema` for the hot path; bodies it refuses go through zod. */
  accepts?: (body: unknown) => body is z.output<Schema>;
  translate: TranslateRequest<z.output<Schema>>;
  /** Prefix of the tool-call ids this format hands out (call_, toolu_). */
  toolCallPrefix: string;
  write(response: ServerResponse, answer: GatewayAnswer, body: z.output<Schema>, headers: Record<string, string>, stream: boolean): void;
}

const streamHeaders = { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" };

function writeStream(response: ServerResponse, headers: Record<string, string>, events: string): void {
  response.writeHead(200, { ...streamHeaders, ...headers });
  response.end(events);
}

const chatFormat: WireFormat<typeof chatRequestSchema> = {
  endpoint: "chat/completions",
  schema: chatRequestSchema,
  accepts: isPlainChatRequest,
  translate: translateChatRequest,
  toolCallPrefix: "call_",
  write: (response, answer, body, headers, stream) =>
    stream
      ? writeStream(response, headers, chatStream(answer, body.stream_options?.include_usage === true))
      : sendJson(response, 200, chatAnswer(answer), headers),
};
const anthropicFormat: WireFormat<typeof anthropicMessagesRequestSchema> = {
  endpoint: "messages",
  schema: anthropicMessagesRequestSchema,
  translate: translateAnthropicRequest,
  toolCallPrefix: "toolu_",
  write: (response, answer, _body, headers, stream) =>
    stream ? writeStream(response, headers, anthropicStream(answer)) : sendJson(response, 200, anthropicAnswer(answer), headers),
};
const responsesFormat: WireFormat<typeof responsesRequestSchema> = {
  endpoint: "responses",
  schema: responsesRequestSchema,
  translate: translateResponsesRequest,
  toolCallPrefix: "call_",
  write: (response, answer, body, headers, stream) =>
    stream ? writeStream(response, headers, responsesStream(answer, body)) : sendJson(response, 200, responsesAnswer(answer, body), headers),
};

/**
 * The signal that aborts a generation when its client goes away: one per connection, fired
 * when the socket closes. HTTP/1.1 carries one request at a time per connection (pipelined
 * ones are lost together), so this is the request's own; an AbortSignal per request and its
 * listeners were about 5% of the server's CPU per proxied completion (bench/gateway.bench.ts).
 */
const connectionSignals = new WeakMap<Socket, AbortSignal>();
function connectionSignal(socket: Socket): AbortSignal {
  let signal = connectionSignals.get(socket);
  if (!signal) {
    const controller = new AbortController();
    signal = controller.signal;
    connectionSignals.set(socket, signal);
    if (socket.destroyed) controller.abort();
    else socket.once("close", () => controller.abort());
  }
  return signal;
}

/** Runs an Anthropic endpoint, answering its refusals in Anthropic's error shape so its SDK reports the reason; 500s go to the router (logged). */
async function withAnthropicErrors(response: ServerResponse, handle: () => Promise<void>): Promise<void> {
  try {
    await handle();
  } catch (error) {
    if (response.headersSent || !(error instanceof HttpError || error instanceof RequestRefused)) throw error;
    const type = error instanceof HttpError ? error.type : error.status === 429 ? "rate_limit_error" : "invalid_request_error";
    sendJson(response, error.status, anthropicError(type, error.message));
  }
}

export class Gateway {
  readonly #warnedFields = new Set<string>();
  /** Per episode, the answers with tool calls it got, so replayed turns record the exact text. */
  readonly #replays = new WeakMap<Episode, ToolCallReplays>();

  constructor(
    private readonly coordinator: TrainingCoordinator,
    private readonly logger: SwarmLogger,
  ) {}

  modelName(): string {
    const model = this.coordinator.config.model;
    return engineKind(model.kind)?.servedModelName?.(model) ?? "a3r-embedded-policy";
  }

  models(request: IncomingMessage, response: ServerResponse): void {
    this.#episodeOf(request);
    sendJson(response, 200, { object: "list", data: [{ id: this.modelName(), object: "model", created: 0, owned_by: "a3r-swarm" }] });
  }

  chatCompletions(request: IncomingMessage, response: ServerResponse): Promise<void> {
    return this.#serve(request, response, chatFormat);
  }

  messages(request: IncomingMessage, response: ServerResponse): Promise<void> {
    return withAnthropicErrors(response, () => this.#serve(request, response, anthropicFormat));
  }

  /** Anthropic's token count for a messages request, by the engine's tokenizer; not a call, nothing recorded. */
  countTokens(request: IncomingMessage, response: ServerResponse): Promise<void> {
    return withAnthropicErrors(response, async () => {
      const episode = this.#episodeOf(request);
      const { config } = this.coordinator;
      const body = parseBody(await readBody(request, config.limits.max_request_body_bytes), anthropicCountTokensSchema, "messages/count_tokens");
      const engine = this.coordinator.engine;
      if (!engine) throw new HttpError(503, "no engine is loaded");
      const translated = translateAnthropicRequest(body, this.#replaysOf(episode));
      const messages = withDefaultSystem(translated.messages, config.default_system_message);
      if (messages.length > config.limits.max_messages_per_request) {
        throw new HttpError(400, `${messages.length} messages exceed limits.max_messages_per_request (${config.limits.max_messages_per_request})`);
      }
      sendJson(response, 200, { input_tokens: engine.encodeChat(messages, { addGenerationPrompt: true }).tokenIds.length });
    });
  }

  responses(request: IncomingMessage, response: ServerResponse): Promise<void> {
    return this.#serve(request, response, responsesFormat);
  }

  /** The part all formats share: limits, translation, sampling policy, generation, recording. */
  async #serve<Schema extends z.ZodType>(request: IncomingMessage, response: ServerResponse, format: WireFormat<Schema>): Promise<void> {
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
    const body = parseBody(text, format.schema, format.endpoint, format.accepts);
    const replays = this.#replaysOf(episode);
    const translated = format.translate(body, replays);
    if (translated.messages.length > config.limits.max_messages_per_request) {
      throw new HttpError(400, `${translated.messages.length} messages exceed limits.max_messages_per_request (${config.limits.max_messages_per_request})`);
    }
    if (episode.calls.length >= config.limits.max_episode_calls) {
      throw new HttpError(400, `episode ${episode.episodeUuid} has made limits.max_episode_calls (${config.limits.max_episode_calls}) calls; end it`);
    }
    const engine = this.coordinator.engine;
    if (!engine) throw new HttpError(503, "no engine is loaded");
    const warnings = this.#ignoredFields(format.endpoint, translated.ignored);
    const sampling = this.#sampling(episode, translated, warnings);
    const messages = withDefaultSystem(translated.messages, config.default_system_message);
    // disable_tool_calls (AgentJet's force_disable_toolcalls): no tools reach the engine, no tool calls are parsed.
    const tools = config.disable_tool_calls ? undefined : translated.tools;
    if (config.disable_tool_calls && translated.tools) warnings.push("tools ignored (disable_tool_calls)");
    const maxTokens = callMaxTokens(config, translated.maxTokens ?? this.coordinator.protocolSampling(episode)?.maxTokens, maxTokensCeiling);
    const overflow = contextOverflow(config, engine, messages, maxTokens);
    const signal = connectionSignal(request.socket);
    episode.inFlight += 1;
    this.coordinator.registry.touch(episode);
    this.coordinator.clients.seen(episode.clientUuid);
    const seed = this.coordinator.samplingSeed(episode, translated.seed);
    let result: GenerateResult;
    try {
      result = overflow
        ? overflow.result
        : await engine.generate({
            messages,
            ...(tools ? { tools } : {}),
            ...sampling,
            maxTokens,
            ...(translated.stop ? { stop: translated.stop } : {}),
            ...(seed === undefined ? {} : { seed }),
            signal,
          });
    } finally {
      episode.inFlight -= 1;
      this.coordinator.registry.touch(episode);
    }
    if (overflow) warnings.push(overflow.warning);
    if (signal.aborted) return;
    if (episode.status !== "running") {
      throw new HttpError(
        401,
        `episode ${episode.episodeUuid} was ${episode.status} while this completion was generated (${episode.closeReason ?? ""}); the completion is dropped`,
      );
    }
    const agentName = request.headers["x-swarm-agent-name"];
    if (!overflow)
      episode.calls.push({
        callIndex: episode.calls.length,
        ...(typeof agentName === "string" && agentName ? { agentName } : {}),
        messages,
        ...(tools ? { tools } : {}),
        promptTokenIds: result.promptTokenIds,
        completionTokenIds: result.completionTokenIds,
        completionText: result.text,
        ...(result.completionLogprobs ? { completionLogprobs: result.completionLogprobs } : {}),
        sampling,
        time: Date.now(),
      });
    // Tool calls are read only where the client offered tools: otherwise the answer is text.
    const parsed = tools ? parseToolCalls(result.text, () => `${format.toolCallPrefix}${idPrefix}${(idCounter += 1)}`) : { text: result.text, toolCalls: [] };
    replays.remember(parsed, result.text);
    // Kept for replay_latest_llm_call (its owner or the admin): AgentJet's debugging aid.
    this.coordinator.recordLatestCall(episode.clientUuid, {
      input: body,
      output: { role: "assistant", content: result.text, finish_reason: result.finishReason },
      time: Date.now() / 1000,
    });
    warnings.push(...(result.warnings ?? []));
    const headers: Record<string, string> = warnings.length > 0 ? { "x-swarm-warnings": warnings.join("; ") } : {};
    const answer: GatewayAnswer = {
      id: `${idPrefix}${(idCounter += 1)}`,
      created: Math.floor(Date.now() / 1000),
      model: translated.model ?? this.modelName(),
      parsed,
      result,
      usage: { promptTokens: result.promptTokenIds.length, completionTokens: result.completionTokenIds.length },
    };
    format.write(response, answer, body, headers, translated.stream);
  }

  /**
   * temperature and top_p for this call. On train episodes with `train_sampling: server`
   * the server's `sampling` applies whatever the client asked (its log-probs are then those
   * of the behaviour policy the optimizer assumes), and the header says what was overridden.
   */
  #sampling(episode: Episode, request: { temperature?: number; topP?: number }, warnings: string[]): { temperature: number; topP: number } {
    const { sampling, train_sampling } = this.coordinator.config;
    // A fixed-protocol eval episode is measured as every other one of its evaluation is.
    const fixed = this.coordinator.protocolSampling(episode);
    if (fixed) {
      if ((request.temperature !== undefined && request.temperature !== fixed.temperature) || (request.topP !== undefined && request.topP !== fixed.topP))
        warnings.push(`temperature and top_p are fixed on protocol eval episodes (eval_protocol: temperature ${fixed.temperature}, top_p ${fixed.topP})`);
      return { temperature: fixed.temperature, topP: fixed.topP };
    }
    if (episode.type === "train" && train_sampling === "server") {
      const overridden = [
        request.temperature !== undefined && request.temperature !== sampling.temperature ? "temperature" : undefined,
        request.topP !== undefined && request.topP !== sampling.top_p ? "top_p" : undefined,
      ].filter((name) => name !== undefined);
      if (overridden.length > 0) {
        warnings.push(
          `${overridden.join(", ")} ignored on train episodes (train_sampling: server; temperature ${sampling.temperature}, top_p ${sampling.top_p} apply)`,
        );
      }
      return { temperature: sampling.temperature, topP: sampling.top_p };
    }
    return { temperature: request.temperature ?? sampling.temperature, topP: request.topP ?? sampling.top_p };
  }

  #replaysOf(episode: Episode): ToolCallReplays {
    let replays = this.#replays.get(episode);
    if (!replays) {
      replays = new ToolCallReplays();
      this.#replays.set(episode, replays);
    }
    return replays;
  }

  #episodeOf(request: IncomingMessage) {
    const apiKeyHeader = request.headers["x-api-key"];
    const key = bearerToken(request) ?? (typeof apiKeyHeader === "string" && apiKeyHeader.trim() !== "" ? apiKeyHeader.trim() : undefined);
    if (!key)
      throw new HttpError(
        401,
        "missing API key: send the openai_api_key of your claimed episode as a Bearer token (or as x-api-key, as the Anthropic SDK does)",
      );
    const episode = this.coordinator.registry.byApiKey(key);
    if (!episode)
      throw new HttpError(401, "invalid or revoked API key: its episode has ended, aborted, been reclaimed, or was never claimed; claim a new episode");
    return episode;
  }

  #ignoredFields(endpoint: string, names: readonly string[]): string[] {
    // Field names are the client's text and go into a response header: printable ASCII
    // only, short, and few (a header with a newline would make writeHead throw).
    const ignored = names.map((key) => key.replace(/[^\x20-\x7e]/g, "?").slice(0, 64)).slice(0, 20);
    const fresh = ignored.filter((name) => !this.#warnedFields.has(`${endpoint} ${name}`));
    if (fresh.length > 0) {
      // Logged once per name; the set is capped so a client inventing names cannot grow it.
      for (const name of fresh) if (this.#warnedFields.size < 1000) this.#warnedFields.add(`${endpoint} ${name}`);
      this.logger.warn({ fields: fresh }, `${endpoint}: ignoring fields the engine cannot honour`);
    }
    return ignored.length > 0 ? [`ignored unsupported fields: ${ignored.join(", ")}`] : [];
  }
}
