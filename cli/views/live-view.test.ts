import { describe, expect, it } from "vitest";
import { eraseUp } from "../../core/terminal-frame.ts";
import type { DispatchRow } from "../../hosts/dispatch/dispatcher.ts";
import { CollectingStream } from "../../test-support/collecting-stream.ts";
import { replayOnScreen } from "../../test-support/terminal-screen.ts";
import { createLiveView, formatElapsed, maxStepsFromOverrides, newLiveMemory, renderLiveTable } from "./live-view.ts";

const start = Date.parse("2026-11-29T10:00:00.000Z");

const row = (overrides: Partial<DispatchRow>): DispatchRow => ({
  campaign: "c",
  blueprintId: "s1-baseline-seed1",
  host: "gpu-1",
  state: "running",
  finished: false,
  gpuIndices: [0],
  step: 12,
  startedAt: new Date(start).toISOString(),
  timeBudgetMs: 600_000,
  lastMetrics: { loss: 1.5, reward_mean: 0.51234 },
  note: "",
  auditErrors: null,
  ...overrides,
});

const waiting = row({ blueprintId: "s1-lr-0.1-seed1", host: null, state: "waiting", gpuIndices: [], step: null, startedAt: null, lastMetrics: null });

function ttyView(options: { columns?: number; rows?: number; metric?: string | null } = {}) {
  const stream = new CollectingStream();
  let now = start + 190_000;
  const view = createLiveView({
    stream,
    tty: true,
    metric: options.metric === undefined ? "reward_mean" : options.metric,
    columns: options.columns ?? 160,
    ...(options.rows !== undefined ? { rows: options.rows } : {}),
    now: () => now,
    maxSteps: (item) => (item.blueprintId === "s1-baseline-seed1" ? 20 : null),
  });
  return { stream, view, advance: (ms: number) => (now += ms) };
}

describe("live view on a terminal", () => {
  it("shows host, state, step of max, the topic's metric, and bars for steps and time", () => {
    const { stream, view } = ttyView();
    view.update([row({}), waiting]);
    const [header, first, second, summary] = stream.text.split("\n");
    expect(header).toMatch(/^EXPERIMENT\s+HOST\s+STATE\s+STEP\s+reward_mean\s+STEPS\s+TIME$/); // no NOTE column while no run has a note
    expect(first).toMatch(/^s1-baseline-seed1\s+gpu-1\s+running\s+12\/20\s+0\.5123\s+██████░░░░\s+60%\s+███░░░░░░░\s+32% 3m10s\/10m$/);
    expect(second).toMatch(/^s1-lr-0\.1-seed1\s+-\s+waiting\s+-\s+-\s+-\/10m$/);
    expect(summary).toBe("2 experiments: 1 running, 1 waiting");
  });

  it("redraws in place: the cursor moves up by the previous frame's height, and one table stays on screen", () => {
    const { stream, view, advance } = ttyView();
    view.update([row({})]);
    const firstHeight = stream.text.split("\n").length - 1;
    expect(firstHeight).toBe(3); // header, one row, summary
    view.update([row({ step: 13 }), waiting]);
    expect(stream.chunks[1]!.startsWith(eraseUp(firstHeight))).toBe(true);
    advance(60_000);
    view.update([row({ step: 14 }), waiting]);
    expect(stream.chunks[2]!.startsWith(eraseUp(4))).toBe(true);
    const screen = replayOnScreen(stream.text);
    expect(screen.filter((line) => line.startsWith("EXPERIMENT"))).toHaveLength(1);
    expect(screen).toHaveLength(4);
    expect(screen[1]).toMatch(/14\/20 .* 4m10s\/10m/);
  });

  it("keeps every line within the terminal's width, narrowing the bars before cutting", () => {
    const long = row({ note: "poll failed (will retry): connection reset by peer while reading status.json" });
    for (const columns of [120, 90, 60, 30]) {
      const { stream, view } = ttyView({ columns });
      view.update([long, waiting]);
      view.update([long, waiting]);
      for (const line of replayOnScreen(stream.text, columns)) expect(Array.from(line).length).toBeLessThanOrEqual(columns);
    }
    const { stream, view } = ttyView({ columns: 90 });
    view.update([row({})]);
    expect(stream.text).toMatch(/████░░ +60%/); // six-cell bars fit where ten-cell ones do not
  });

  it("prints notes above the table without breaking the frame", () => {
    const { stream, view } = ttyView();
    view.note("leader: dispatch (stage 1)");
    view.update([row({})]);
    view.note("leader: watch (stage 1)");
    view.update([row({ step: 15 })]);
    const screen = replayOnScreen(stream.text);
    expect(screen.slice(0, 3)).toEqual(["leader: dispatch (stage 1)", "leader: watch (stage 1)", expect.stringMatching(/^EXPERIMENT/)]);
    expect(screen).toHaveLength(5);
    expect(screen[3]).toMatch(/15\/20/);
  });

  it("remembers the metric's last value and freezes the time of a finished run; the last frame stays on close", () => {
    const { stream, view, advance } = ttyView();
    view.update([row({})]);
    advance(30_000);
    view.update([row({ state: "succeeded", finished: true, step: 20, lastMetrics: { loss: 1 }, auditErrors: 0 })]);
    advance(600_000);
    view.update([row({ state: "succeeded", finished: true, step: 20, lastMetrics: { loss: 1 }, auditErrors: 0 })]);
    view.close();
    view.update([row({ state: "failed" })]);
    const screen = replayOnScreen(stream.text);
    expect(screen[1]).toMatch(/succeeded\s+20\/20\s+0\.5123\s+██████████ 100%\s+████░░░░░░\s+37% 3m40s\/10m\s+fetched, audit clean/);
    expect(screen[2]).toBe("1 experiment: 1 succeeded");
  });

  it("shows the first metric a run reports when the topic names none", () => {
    const { stream, view } = ttyView({ metric: null });
    view.update([row({})]);
    expect(stream.text.split("\n")[0]).toMatch(/\bMETRIC\b/);
    expect(stream.text).toContain("loss=1.5");
  });
});

describe("live view off a terminal", () => {
  it("writes one plain line per changed row and notes as lines, with no escape sequences", () => {
    const stream = new CollectingStream();
    const view = createLiveView({ stream, tty: false, metric: "reward_mean", now: () => start });
    view.note("leader: watch (stage 1)");
    view.update([row({}), waiting]);
    view.update([row({ step: 13 }), waiting]);
    view.update([row({ state: "succeeded", finished: true, auditErrors: 0 }), waiting]);
    view.close();
    expect(stream.text).toBe(
      [
        "leader: watch (stage 1)",
        "  s1-baseline-seed1: running on gpu-1 (GPUs 0) step 12",
        "  s1-lr-0.1-seed1: waiting on -",
        "  s1-baseline-seed1: succeeded on gpu-1 (GPUs 0) step 12 - audit errors: 0",
        "",
      ].join("\n"),
    );
  });
});

describe("live table pieces", () => {
  it("formats elapsed times in seconds, then minutes past an hour", () => {
    expect(formatElapsed(0)).toBe("0s");
    expect(formatElapsed(190_400)).toBe("3m10s");
    expect(formatElapsed(3_900_000 + 59_000)).toBe("1h5m");
  });

  it("shows a run that had already ended when first seen without a made-up elapsed time", () => {
    const text = renderLiveTable([row({ state: "failed", finished: true })], {
      metric: "reward_mean",
      now: start + 5 * 86_400_000,
      columns: 200,
      memory: newLiveMemory(),
    });
    expect(text).toMatch(/failed\s+12\s+0\.5123\s+-\/10m/);
  });

  it("reads the last step from blueprint overrides", () => {
    expect(maxStepsFromOverrides({ max_steps: 20 })).toBe(20);
    expect(maxStepsFromOverrides({ total_steps: 300, lr: 0.1 })).toBe(300);
    expect(maxStepsFromOverrides({ max_steps: "20" })).toBeNull();
    expect(maxStepsFromOverrides(undefined)).toBeNull();
  });
});

describe("live view: a model call in flight", () => {
  it("shows a slow call's tokens and time in a log every 15 s, and nothing once the view is closed", async () => {
    const { publishLlmProgress } = await import("../../llm/index.ts");
    const stream = new CollectingStream();
    const view = createLiveView({ stream, tty: false, metric: null });
    const progress = { role: "frame", provider: "openai", model: "qwen3", done: false };
    publishLlmProgress({ ...progress, outputTokens: undefined, elapsedMs: 5000 });
    publishLlmProgress({ ...progress, outputTokens: 120, elapsedMs: 16_000 });
    publishLlmProgress({ ...progress, outputTokens: 130, elapsedMs: 20_000 });
    view.close();
    publishLlmProgress({ ...progress, outputTokens: 400, elapsedMs: 40_000 });
    expect(stream.text).toBe("  llm: frame (openai qwen3) 120 tokens, 16s\n");
  });
});
