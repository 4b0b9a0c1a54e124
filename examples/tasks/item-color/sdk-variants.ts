import Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import type { AskPolicy, SwarmTask } from "../task-types.ts";
import task, { type ItemColorTask } from "./task.ts";

/**
 * The item-color task through the swarm gateway's other two wire formats, for agents built
 * on them: the same prompts and scoring (`task.playEpisode`), only the one policy call
 * differs. Each variant is a task module like task.ts, so the swarm client runner
 * (`runEpisodes`) hands it the episode's OpenAI client, whose base URL and key it reuses.
 */

/** Anthropic's Messages API: the system prompt is a top-level field; the answer is the text blocks. */
export function askThroughAnthropic(openaiBaseUrl: string, apiKey: string): AskPolicy {
  // The Anthropic SDK appends /v1/messages itself, so its base URL is the server's root.
  const anthropic = new Anthropic({ baseURL: openaiBaseUrl.replace(/\/v1\/?$/, ""), apiKey, maxRetries: 0 });
  return async (messages, options) => {
    const system = messages.filter((message) => message.role === "system").map((message) => message.content);
    const answer = await anthropic.messages.create({
      model: "policy",
      max_tokens: options.maxTokens ?? 16,
      ...(system.length > 0 ? { system: system.join("\n") } : {}),
      messages: messages.flatMap((message) => (message.role === "system" ? [] : [{ role: message.role, content: message.content }])),
    });
    return answer.content.map((block) => (block.type === "text" ? block.text : "")).join("");
  };
}

/** OpenAI's Responses API: the system prompt as `instructions`, the conversation as `input` items. */
export function askThroughResponses(openai: OpenAI): AskPolicy {
  return async (messages, options) => {
    const system = messages.filter((message) => message.role === "system").map((message) => message.content);
    const response = await openai.responses.create({
      model: "policy",
      ...(system.length > 0 ? { instructions: system.join("\n") } : {}),
      input: messages.flatMap((message) => (message.role === "system" ? [] : [{ role: message.role, content: message.content }])),
      ...(options.maxTokens !== undefined ? { max_output_tokens: options.maxTokens } : {}),
    });
    return response.output_text;
  };
}

export const itemColorOverAnthropic: SwarmTask<ItemColorTask> = {
  ...task,
  name: "item-color-anthropic",
  description: `${task.description} Asked through Anthropic's Messages API.`,
  runEpisode: (openai, instance) => task.playEpisode(instance, askThroughAnthropic(openai.baseURL, openai.apiKey ?? "")),
};

export const itemColorOverResponses: SwarmTask<ItemColorTask> = {
  ...task,
  name: "item-color-responses",
  description: `${task.description} Asked through OpenAI's Responses API.`,
  runEpisode: (openai, instance) => task.playEpisode(instance, askThroughResponses(openai)),
};
