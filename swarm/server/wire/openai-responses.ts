import { z } from "zod";
import type { ChatMessage } from "../../engines/port/engine.ts";
import { HttpError } from "./http-tools.ts";
import type { ReplayedToolCall, ToolCallReplays } from "./tool-calls.ts";
import { functionTool, namedEvent, textPieces, type GatewayAnswer, type TranslatedRequest } from "./wire-types.ts";

/**
 * OpenAI's Responses API (`POST /v1/responses`) on the gateway (`client.responses.create`
 * with the episode's base URL and key). `instructions` becomes the system message, `input`
 * (a string or a list of items) the conversation: message items by role, an assistant's
 * `function_call` items joined to its turn as the tool-call text the policy wrote
 * (tool-calls.ts), `function_call_output` items as `tool` messages. Nothing is stored on
 * the server, so `previous_response_id` is refused: send the whole conversation as input.
 */

const partSchema = z.looseObject({ type: z.string(), text: z.string().optional() });
const itemSchema = z.looseObject({
  type: z.string().optional(),
  role: z.enum(["user", "assistant", "system", "developer"]).optional(),
  content: z.union([z.string(), z.array(partSchema)]).optional(),
  call_id: z.string().optional(),
  name: z.string().optional(),
  arguments: z.string().optional(),
  output: z.union([z.string(), z.array(partSchema)]).optional(),
});
const toolSchema = z.looseObject({
  type: z.string(),
  name: z.string().optional(),
  description: z.string().nullable().optional(),
  parameters: z.unknown().optional(),
});

export const responsesRequestSchema = z.looseObject({
  model: z.string().optional(),
  input: z.union([z.string(), z.array(itemSchema).min(1, "give at least one input item")]),
  instructions: z.string().nullable().optional(),
  max_output_tokens: z.number().int().positive().nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  stream: z.boolean().nullable().optional(),
  tools: z.array(toolSchema).nullable().optional(),
  previous_response_id: z.string().nullable().optional(),
  /** Stored responses are not kept; accepted so clients that send store: true work. */
  store: z.boolean().nullable().optional(),
});
export type ResponsesRequest = z.output<typeof responsesRequestSchema>;

const honoured = new Set(["model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "stream", "tools", "previous_response_id", "store"]);

export function translateResponsesRequest(body: ResponsesRequest, replays: ToolCallReplays): TranslatedRequest {
  if (body.previous_response_id) {
    throw new HttpError(400, "responses: previous_response_id is not supported (the swarm gateway stores no responses); send the whole conversation in input");
  }
  const ignored = Object.keys(body).filter((key) => !honoured.has(key) && (body as Record<string, unknown>)[key] !== null);
  const ignoredPart = (type: string): void => {
    const name = `input part "${type.slice(0, 40)}"`;
    if (!ignored.includes(name)) ignored.push(name);
  };
  const messages: ChatMessage[] = [];
  if (body.instructions) messages.push({ role: "system", content: body.instructions });
  if (typeof body.input === "string") {
    messages.push({ role: "user", content: body.input });
  } else {
    // An assistant turn is its message item (if any) plus the function_call items after it.
    let turn: { text: string; calls: ReplayedToolCall[] } | undefined;
    const closeTurn = (): void => {
      if (turn) messages.push({ role: "assistant", content: replays.replay(turn.text, turn.calls) });
      turn = undefined;
    };
    for (const item of body.input) {
      const type = item.type ?? "message";
      if (type === "function_call") {
        if (item.name === undefined) throw new HttpError(400, 'responses: invalid field "input": a function_call item needs its name');
        turn ??= { text: "", calls: [] };
        turn.calls.push({ name: item.name, arguments: item.arguments ?? "{}" });
      } else if (type === "function_call_output") {
        closeTurn();
        const output = item.output;
        messages.push({
          role: "tool",
          content: typeof output === "string" ? output : partsText(output ?? [], ignoredPart),
          ...(item.call_id ? { tool_call_id: item.call_id } : {}),
        });
      } else if (type === "message") {
        if (item.role === undefined) throw new HttpError(400, 'responses: invalid field "input": a message item needs its role');
        const text = typeof item.content === "string" ? item.content : partsText(item.content ?? [], ignoredPart);
        if (item.role === "assistant") {
          closeTurn();
          turn = { text, calls: [] };
        } else {
          closeTurn();
          messages.push({ role: item.role === "developer" ? "system" : item.role, content: text });
        }
      } else {
        ignoredPart(type);
      }
    }
    closeTurn();
  }
  const tools = body.tools?.map((tool) =>
    tool.type === "function" && tool.name ? functionTool(tool.name, tool.description ?? undefined, tool.parameters) : tool,
  );
  return {
    messages,
    ...(tools && tools.length > 0 ? { tools } : {}),
    ...(typeof body.temperature === "number" ? { temperature: body.temperature } : {}),
    ...(typeof body.top_p === "number" ? { topP: body.top_p } : {}),
    ...(typeof body.max_output_tokens === "number" ? { maxTokens: body.max_output_tokens } : {}),
    stream: body.stream === true,
    ...(body.model === undefined ? {} : { model: body.model }),
    ignored,
  };
}

function partsText(parts: readonly z.output<typeof partSchema>[], ignoredPart: (type: string) => void): string {
  const texts: string[] = [];
  for (const part of parts) {
    if ((part.type === "input_text" || part.type === "output_text" || part.type === "text") && part.text !== undefined) texts.push(part.text);
    else ignoredPart(part.type);
  }
  return texts.join("");
}

interface OutputItems {
  message?: { type: "message"; id: string; status: string; role: "assistant"; content: Array<{ type: "output_text"; text: string; annotations: [] }> };
  calls: Array<{ type: "function_call"; id: string; call_id: string; name: string; arguments: string; status: string }>;
}

function outputOf(answer: GatewayAnswer): OutputItems {
  const { text, toolCalls } = answer.parsed;
  return {
    ...(text !== "" || toolCalls.length === 0
      ? {
          message: {
            type: "message" as const,
            id: `msg_${answer.id}`,
            status: "completed",
            role: "assistant" as const,
            content: [{ type: "output_text" as const, text, annotations: [] as [] }],
          },
        }
      : {}),
    calls: toolCalls.map((call, index) => ({
      type: "function_call" as const,
      id: `fc_${answer.id}_${index}`,
      call_id: call.id,
      name: call.name,
      arguments: call.arguments,
      status: "completed",
    })),
  };
}

function responseObject(answer: GatewayAnswer, request: ResponsesRequest, output: unknown[], status: string): object {
  const incomplete = status === "incomplete";
  return {
    id: `resp_${answer.id}`,
    object: "response",
    created_at: answer.created,
    status,
    error: null,
    incomplete_details: incomplete ? { reason: "max_output_tokens" } : null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    model: answer.model,
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    temperature: request.temperature ?? null,
    top_p: request.top_p ?? null,
    tool_choice: "auto",
    tools: request.tools ?? [],
    text: { format: { type: "text" } },
    truncation: "disabled",
    store: false,
    metadata: {},
    usage: {
      input_tokens: answer.usage.promptTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: answer.usage.completionTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: answer.usage.promptTokens + answer.usage.completionTokens,
    },
  };
}

function finalStatus(answer: GatewayAnswer): string {
  return answer.result.finishReason === "length" && answer.parsed.toolCalls.length === 0 ? "incomplete" : "completed";
}

export function responsesAnswer(answer: GatewayAnswer, request: ResponsesRequest): object {
  const { message, calls } = outputOf(answer);
  return responseObject(answer, request, [...(message ? [message] : []), ...calls], finalStatus(answer));
}

/**
 * The answer as Responses' event sequence: response.created, response.in_progress, per
 * output item its added/delta/done events, then response.completed (or .incomplete when
 * the answer ran out of tokens), each with its sequence_number.
 */
export function responsesStream(answer: GatewayAnswer, request: ResponsesRequest): string {
  const events: string[] = [];
  let sequence = 0;
  const emit = (type: string, data: object): void => {
    events.push(namedEvent(type, { type, sequence_number: sequence++, ...data }));
  };
  emit("response.created", { response: responseObject(answer, request, [], "in_progress") });
  emit("response.in_progress", { response: responseObject(answer, request, [], "in_progress") });
  const { message, calls } = outputOf(answer);
  const done: unknown[] = [];
  let outputIndex = 0;
  if (message) {
    const text = message.content[0]!.text;
    const where = { item_id: message.id, output_index: outputIndex, content_index: 0 };
    emit("response.output_item.added", { output_index: outputIndex, item: { ...message, status: "in_progress", content: [] } });
    emit("response.content_part.added", { ...where, part: { type: "output_text", text: "", annotations: [] } });
    for (const delta of textPieces(text)) emit("response.output_text.delta", { ...where, delta, logprobs: [] });
    emit("response.output_text.done", { ...where, text, logprobs: [] });
    emit("response.content_part.done", { ...where, part: message.content[0] });
    emit("response.output_item.done", { output_index: outputIndex, item: message });
    done.push(message);
    outputIndex += 1;
  }
  for (const call of calls) {
    const where = { item_id: call.id, output_index: outputIndex };
    emit("response.output_item.added", { output_index: outputIndex, item: { ...call, status: "in_progress", arguments: "" } });
    emit("response.function_call_arguments.delta", { ...where, delta: call.arguments });
    emit("response.function_call_arguments.done", { ...where, name: call.name, arguments: call.arguments });
    emit("response.output_item.done", { output_index: outputIndex, item: call });
    done.push(call);
    outputIndex += 1;
  }
  const status = finalStatus(answer);
  emit(status === "incomplete" ? "response.incomplete" : "response.completed", { response: responseObject(answer, request, done, status) });
  return events.join("");
}
