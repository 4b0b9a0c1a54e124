import { describe, expect, it } from "vitest";
import { translateAnthropicRequest } from "./anthropic-messages.ts";
import { translateChatRequest } from "./chat-completions.ts";
import { translateResponsesRequest } from "./openai-responses.ts";
import { parseToolCalls, renderToolCalls, ToolCallReplays } from "./tool-calls.ts";

function ids(): () => string {
  let next = 0;
  return () => `id${(next += 1)}`;
}

describe("the Hermes/Qwen tool-call text format", () => {
  it("splits text and calls, arguments as JSON text, ids from the caller", () => {
    const text =
      'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>\n<tool_call>{"name":"clock","arguments":"{\\"tz\\": \\"UTC\\"}"}</tool_call>';
    expect(parseToolCalls(text, ids())).toEqual({
      text: "Let me look.",
      toolCalls: [
        { id: "id1", name: "get_weather", arguments: '{"city":"Paris","days":2}' },
        { id: "id2", name: "clock", arguments: '{"tz":"UTC"}' },
      ],
    });
    // `parameters` is another spelling some templates use; no arguments at all is {}.
    expect(parseToolCalls('<tool_call>{"name": "a", "parameters": {"x": 1}}</tool_call>', ids()).toolCalls[0]!.arguments).toBe('{"x":1}');
    expect(parseToolCalls('<tool_call>{"name": "noop"}</tool_call>', ids()).toolCalls[0]).toEqual({ id: "id1", name: "noop", arguments: "{}" });
  });

  it("leaves malformed, nameless, non-object and unclosed blocks in the text", () => {
    for (const text of [
      "plain answer",
      "<tool_call>{not json}</tool_call>",
      '<tool_call>{"arguments": {}}</tool_call>',
      '<tool_call>["name"]</tool_call>',
      '<tool_call>{"name": "f", "arguments": [1]}</tool_call>',
      '<tool_call>{"name": "f", "arguments": {"x": 1}',
    ]) {
      expect(parseToolCalls(text, ids())).toEqual({ text, toolCalls: [] });
    }
    // A good call next to a bad one: the bad block stays as text.
    const mixed = parseToolCalls('<tool_call>oops</tool_call> then <tool_call>{"name": "f"}</tool_call>', ids());
    expect(mixed).toEqual({ text: "<tool_call>oops</tool_call> then", toolCalls: [{ id: "id1", name: "f", arguments: "{}" }] });
  });

  it("takes linear time on adversarial input (many open tags, no close)", () => {
    const text = "<tool_call>".repeat(50_000);
    expect(parseToolCalls(text, ids()).toolCalls).toEqual([]);
  });

  it("renders a turn it did not see in the template's form, and replays one it did see verbatim", () => {
    expect(renderToolCalls("ok", [{ name: "f", arguments: '{"x": 1}' }])).toBe('ok\n<tool_call>\n{"name":"f","arguments":{"x":1}}\n</tool_call>');
    const replays = new ToolCallReplays();
    const written = 'Sure.\n\n<tool_call>\n{"arguments": {"b": 2, "a": 1},   "name": "sum"}\n</tool_call>';
    const parsed = parseToolCalls(written, ids());
    replays.remember(parsed, written);
    // The client sends the arguments back re-serialized: the recorded text is still what the policy wrote.
    expect(replays.replay("Sure.", [{ name: "sum", arguments: '{"a":1,"b":2}' }])).toBe(written);
    expect(replays.replay("Sure.", [{ name: "sum", arguments: { a: 1, b: 2 } }])).toBe(written);
    expect(replays.replay("Sure.", [{ name: "sum", arguments: { a: 1, b: 3 } }])).toBe(renderToolCalls("Sure.", [{ name: "sum", arguments: { a: 1, b: 3 } }]));
    expect(replays.replay("just text", [])).toBe("just text");
  });
});

describe("the three wire formats translate to one conversation", () => {
  const written = '<tool_call>\n{"name": "lookup", "arguments": {"item": "sky"}}\n</tool_call>';
  const tool = { name: "lookup", description: "find a colour", parameters: { type: "object", properties: { item: { type: "string" } } } };
  const expected = [
    { role: "system", content: "You name colours." },
    { role: "user", content: "What colour is the sky?" },
    { role: "assistant", content: written },
    { role: "tool", content: "blue", tool_call_id: "c1" },
    { role: "user", content: "So?" },
  ];
  const replaysWith = (): ToolCallReplays => {
    const replays = new ToolCallReplays();
    replays.remember(parseToolCalls(written, ids()), written);
    return replays;
  };

  it("chat completions, Anthropic messages and Responses input give the same messages and tool schemas", () => {
    const chat = translateChatRequest(
      {
        messages: [
          { role: "developer", content: "You name colours." },
          { role: "user", content: "What colour is the sky?" },
          { role: "assistant", content: null, tool_calls: [{ id: "c1", function: { name: "lookup", arguments: '{"item":"sky"}' } }] },
          { role: "tool", content: "blue", tool_call_id: "c1" },
          { role: "user", content: [{ type: "text", text: "So?" }] },
        ],
        tools: [{ type: "function", function: tool }],
      },
      replaysWith(),
    );
    const anthropic = translateAnthropicRequest(
      {
        max_tokens: 5,
        system: [{ type: "text", text: "You name colours." }],
        messages: [
          { role: "user", content: "What colour is the sky?" },
          { role: "assistant", content: [{ type: "tool_use", id: "c1", name: "lookup", input: { item: "sky" } }] },
          {
            role: "user",
            content: [
              { type: "tool_result", tool_use_id: "c1", content: [{ type: "text", text: "blue" }] },
              { type: "text", text: "So?" },
            ],
          },
        ],
        tools: [{ name: "lookup", description: "find a colour", input_schema: tool.parameters }],
        top_k: 3,
      },
      replaysWith(),
    );
    const responses = translateResponsesRequest(
      {
        instructions: "You name colours.",
        input: [
          { role: "user", content: "What colour is the sky?" },
          { type: "function_call", call_id: "c1", name: "lookup", arguments: '{"item": "sky"}' },
          { type: "function_call_output", call_id: "c1", output: "blue" },
          { type: "message", role: "user", content: [{ type: "input_text", text: "So?" }] },
        ],
        tools: [{ type: "function", ...tool }],
      },
      replaysWith(),
    );
    for (const translated of [chat, anthropic, responses]) {
      expect(translated.messages).toEqual(expected);
      expect(translated.tools).toEqual([{ type: "function", function: tool }]);
    }
    expect(anthropic.ignored).toEqual(["top_k"]);
    expect(anthropic.maxTokens).toBe(5);
  });

  it("Responses: a string input is one user turn; previous_response_id is refused with the fix", () => {
    expect(translateResponsesRequest({ input: "hi", instructions: "be brief" }, new ToolCallReplays()).messages).toEqual([
      { role: "system", content: "be brief" },
      { role: "user", content: "hi" },
    ]);
    expect(() => translateResponsesRequest({ input: "hi", previous_response_id: "resp_1" }, new ToolCallReplays())).toThrow(
      /previous_response_id is not supported.*send the whole conversation in input/,
    );
  });
});
