import type { ChatMessage, TokenUsage, ToolCall, ToolDefinition } from "./chat-model.ts";
import type { CallSignal } from "./call-signal.ts";
import type { OutputSpecification } from "./model-schema.ts";

/** One round trip as the shared core hands it to a provider. */
export interface BackendRequest {
  system?: string;
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  /** Present when a structured answer is wanted. */
  output?: OutputSpecification;
  maxTokens: number;
  temperature?: number;
  role: string;
  callSignal: CallSignal;
  /** A streaming backend reports the output tokens it has received so far (for the progress line). */
  onOutput?: (outputTokens: number) => void;
}

export interface BackendResponse {
  text: string;
  /**
   * The structured answer when the provider returns it apart from the text (Anthropic's
   * forced tool call, a script's `parsed`); otherwise the core parses `text` as JSON.
   */
  structured?: unknown;
  toolCalls: ToolCall[];
  usage: TokenUsage;
  /** The model that answered, as the provider names it. */
  model: string;
  stopReason?: string;
}

/**
 * What a provider plug-in implements: exactly one round trip, wire format in and out.
 * Leaves out: validation, repair, cost, the ledger, deadlines (the shared core does those
 * the same way for every provider). A backend must throw only A3rError, classified where
 * the failure is seen (see provider-errors.ts), and must honour `callSignal.signal`.
 */
export interface ChatBackend {
  readonly provider: string;
  readonly model: string;
  send(request: BackendRequest): Promise<BackendResponse>;
}
