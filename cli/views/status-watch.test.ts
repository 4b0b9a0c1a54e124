import { describe, expect, it } from "vitest";
import { eraseUp } from "../../core/terminal-frame.ts";
import { CollectingStream } from "../../test-support/collecting-stream.ts";
import { replayOnScreen } from "../../test-support/terminal-screen.ts";
import { watchStatus } from "./status-watch.ts";

/** A render that walks through `texts`, done on the last one, counting its calls. */
function scripted(texts: string[]) {
  let calls = 0;
  return {
    get calls() {
      return calls;
    },
    render: async () => {
      const text = texts[Math.min(calls, texts.length - 1)]!;
      calls += 1;
      return { text, done: calls >= texts.length };
    },
  };
}

describe("watchStatus", () => {
  it("redraws the text in place on a terminal and returns once the campaign is done", async () => {
    const stream = new CollectingStream();
    const source = scripted(["campaign\nstate: running\nstep 1", "campaign\nstate: running\nstep 2", "campaign\nstate: finished"]);
    const result = await watchStatus({ render: source.render, stream, tty: true, intervalMs: 1, columns: 80 });
    expect(result).toEqual({ text: "campaign\nstate: finished", done: true });
    expect(source.calls).toBe(3);
    expect(stream.chunks[1]!.startsWith(eraseUp(3))).toBe(true);
    expect(stream.chunks[2]!.startsWith(eraseUp(3))).toBe(true);
    expect(replayOnScreen(stream.text)).toEqual(["campaign", "state: finished"]);
  });

  it("cuts lines to the terminal's width", async () => {
    const stream = new CollectingStream();
    const source = scripted([`${"x".repeat(50)}\nshort`]);
    await watchStatus({ render: source.render, stream, tty: true, intervalMs: 1, columns: 20 });
    expect(stream.text).toBe(`${"x".repeat(19)}…\nshort\n`);
  });

  it("prints only changed texts off a terminal, without escape sequences", async () => {
    const stream = new CollectingStream();
    const source = scripted(["state: running", "state: running", "state: running", "state: finished"]);
    await watchStatus({ render: source.render, stream, tty: false, intervalMs: 1 });
    expect(source.calls).toBe(4);
    expect(stream.text).toBe("state: running\n\nstate: finished\n");
  });

  it("returns when the signal aborts between rounds", async () => {
    const abort = new AbortController();
    let calls = 0;
    const render = async () => {
      calls += 1;
      if (calls === 2) abort.abort();
      return { text: `round ${calls}`, done: false };
    };
    const result = await watchStatus({ render, stream: new CollectingStream(), tty: true, intervalMs: 1, signal: abort.signal, columns: 80 });
    expect(result).toEqual({ text: "round 2", done: false });
    expect(calls).toBe(2);
  });

  it("returns when the signal aborts during the wait, without waiting out the interval", async () => {
    const abort = new AbortController();
    // An hour between rounds: only the abort can end this within the test's timeout.
    const waiting = watchStatus({
      render: async () => ({ text: "still running", done: false }),
      stream: new CollectingStream(),
      tty: false,
      intervalMs: 3_600_000,
      signal: abort.signal,
    });
    setImmediate(() => abort.abort());
    await expect(waiting).resolves.toEqual({ text: "still running", done: false });
  });

  it("passes a render error on to the caller", async () => {
    const stream = new CollectingStream();
    const render = async (): Promise<{ text: string; done: boolean }> => {
      throw new Error("events.jsonl unreadable");
    };
    await expect(watchStatus({ render, stream, tty: true, intervalMs: 1 })).rejects.toThrow("events.jsonl unreadable");
  });
});
