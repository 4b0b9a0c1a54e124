import { describe, expect, it } from "vitest";
import { backoffDelay, isConnectionError, sleep } from "./backoff.ts";

describe("backoffDelay", () => {
  it("doubles from the initial delay and never passes the cap", () => {
    const options = { initialMs: 100, maxMs: 1000 };
    expect(backoffDelay(0, options, () => 1)).toBe(100);
    expect(backoffDelay(3, options, () => 1)).toBe(800);
    expect(backoffDelay(4, options, () => 1)).toBe(1000);
    expect(backoffDelay(500, options, () => 1)).toBe(1000);
    expect(backoffDelay(3, options, () => 0)).toBe(400);
  });
});

describe("isConnectionError", () => {
  it("recognises refused connections and timeouts, not refusals or bugs", async () => {
    const refused = await fetch("http://127.0.0.1:9/").catch((error: unknown) => error);
    expect(isConnectionError(refused)).toBe(true);
    const timeout = new DOMException("timed out", "TimeoutError");
    expect(isConnectionError(timeout)).toBe(true);
    expect(isConnectionError(new Error("HTTP 400"))).toBe(false);
    expect(isConnectionError("string")).toBe(false);
  });
});

describe("sleep", () => {
  it("rejects with the abort reason", async () => {
    const controller = new AbortController();
    const pending = sleep(10_000, controller.signal);
    controller.abort(new Error("stop"));
    await expect(pending).rejects.toThrow("stop");
  });
});
