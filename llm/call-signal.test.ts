import { describe, expect, it } from "vitest";
import { createCallSignal } from "./call-signal.ts";

describe("call signal", () => {
  it("fires for the caller and says so", () => {
    const caller = new AbortController();
    const call = createCallSignal(caller.signal, 10_000);
    expect(call.cause()).toBeUndefined();
    caller.abort();
    expect(call.signal.aborted).toBe(true);
    expect(call.cause()).toBe("caller");
    call.dispose();
  });

  it("starts aborted when the caller's signal already is", () => {
    const call = createCallSignal(AbortSignal.abort(), 10_000);
    expect(call.signal.aborted).toBe(true);
    expect(call.cause()).toBe("caller");
    call.dispose();
  });

  it("fires at its deadline and says so; a later caller abort does not change the cause", async () => {
    const caller = new AbortController();
    const call = createCallSignal(caller.signal, 20);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(call.signal.aborted).toBe(true);
    expect(call.cause()).toBe("deadline");
    caller.abort();
    expect(call.cause()).toBe("deadline");
    call.dispose();
  });

  it("after dispose, neither the deadline nor the caller fires it", async () => {
    const caller = new AbortController();
    const call = createCallSignal(caller.signal, 20);
    call.dispose();
    caller.abort();
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(call.signal.aborted).toBe(false);
  });
});
