import { z } from "zod";
import { A3rError } from "../core/errors.ts";
import type { ChatRequest } from "./chat-model.ts";

// Both providers accept tool names of this shape; checking here gives one clear message
// instead of two different HTTP 400s.
const toolName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "use 1 to 64 letters, digits, _ or -");

const requestShape = z
  .object({
    system: z.string().optional(),
    messages: z
      .array(z.object({ role: z.enum(["user", "assistant"]), content: z.string() }))
      .min(1, "give at least one message")
      .refine((messages) => messages.at(-1)?.role === "user", "the last message must be the user's"),
    tools: z.array(z.object({ name: toolName, description: z.string() })).optional(),
    schemaName: toolName.optional(),
    maxTokens: z.number().int().positive(),
    temperature: z.number().min(0).max(2).optional(),
    role: z.string().min(1).optional(),
  })
  .refine((request) => !request.tools?.some((tool) => tool.name === (request.schemaName ?? "answer")), {
    path: ["schemaName"],
    message: "the structured answer's name is also a tool's name; give schemaName another value",
  });

/** Fails before any token is spent when a caller built an impossible request. */
export function checkRequest(request: ChatRequest<z.ZodType>): void {
  const result = requestShape.safeParse(request);
  if (result.success) return;
  const issue = result.error.issues[0];
  const where = `request.${issue?.path.join(".") ?? ""}`;
  throw new A3rError("LLM_BAD_REQUEST", `invalid chat request at ${where}: ${issue?.message ?? "invalid"}`, {
    where,
    hint: "Fix the request built by the caller; nothing was sent to the model.",
  });
}
