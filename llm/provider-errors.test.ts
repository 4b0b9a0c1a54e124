import { describe, expect, it } from "vitest";
import Anthropic from "@anthropic-ai/sdk";
import { createCallSignal } from "./call-signal.ts";
import { codeForHttpStatus, toProviderError } from "./provider-errors.ts";

describe("provider errors", () => {
  it("classifies HTTP statuses", () => {
    expect([401, 403, 429, 408, 500, 503, 529, 400, 404, 422].map(codeForHttpStatus)).toEqual([
      "LLM_AUTH_FAILED",
      "LLM_AUTH_FAILED",
      "LLM_RATE_LIMITED",
      "LLM_TIMEOUT",
      "LLM_UNAVAILABLE",
      "LLM_UNAVAILABLE",
      "LLM_UNAVAILABLE",
      "LLM_BAD_REQUEST",
      "LLM_BAD_REQUEST",
      "LLM_BAD_REQUEST",
    ]);
  });

  it("lets the call signal decide between abort and timeout, and redacts the key", () => {
    const context = (callSignal = createCallSignal(undefined, undefined)) => ({
      provider: "anthropic",
      apiKeyName: "ANTHROPIC_API_KEY",
      classes: Anthropic,
      callSignal,
      secrets: ["my-secret-key-123456"],
    });
    const caller = new AbortController();
    const aborted = createCallSignal(caller.signal, undefined);
    caller.abort();
    expect(toProviderError(new Anthropic.APIUserAbortError(), context(aborted)).code).toBe("LLM_ABORTED");
    const refused = Anthropic.APIError.generate(401, { error: { message: "bad key my-secret-key-123456" } }, undefined, new Headers());
    const error = toProviderError(refused, context());
    expect(error.code).toBe("LLM_AUTH_FAILED");
    expect(error.message).not.toContain("my-secret-key-123456");
    expect(error.hint).toContain("ANTHROPIC_API_KEY");
    expect(toProviderError(new TypeError("boom"), context()).code).toBe("INTERNAL");
  });
});
