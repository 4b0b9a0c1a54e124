import { describe, expect, it } from "vitest";
import { newRunStatus } from "../../campaign/index.ts";
import { describeProgress, parseMetricsTail } from "./run-progress.ts";

const ref = { campaign: "c", blueprintId: "b" };
const now = new Date("2026-11-29T12:00:00.000Z");
const marker = (launchedAt: string) => JSON.stringify({ ...ref, host: "h", resultDir: "/r", gpuIndices: [2, 3], pgid: 42, launchedAt });

describe("describeProgress", () => {
  it("is unknown when the host has nothing for the run", () => {
    expect(describeProgress(ref, "h", {}, now)).toMatchObject({ state: "unknown", finished: false, gpuIndices: [] });
  });

  it("is launching until status.json appears, while the process lives or the launch is young", () => {
    expect(describeProgress(ref, "h", { launch: marker("2026-11-29T11:59:59.000Z"), alive: true }, now).state).toBe("launching");
    expect(describeProgress(ref, "h", { launch: marker("2026-11-29T11:59:59.000Z"), alive: false }, now).state).toBe("launching");
  });

  it("is lost when nothing is alive and the run neither finished nor is young", () => {
    expect(describeProgress(ref, "h", { launch: marker("2026-11-29T11:00:00.000Z"), alive: false }, now).state).toBe("lost");
    const running = JSON.stringify(newRunStatus({ state: "running", step: 4 }));
    expect(describeProgress(ref, "h", { launch: marker("2026-11-29T11:59:59.000Z"), status: running, alive: false }, now).state).toBe("lost");
  });

  it("takes the state and progress from status.json, and the final word from finish.flag", () => {
    const status = JSON.stringify(newRunStatus({ state: "running", step: 7, lastMetrics: { reward_mean: 0.5 }, heartbeatAt: "2026-11-29T11:59:00.000Z" }));
    const running = describeProgress(ref, "h", { launch: marker("2026-11-29T11:00:00.000Z"), status, alive: true }, now);
    expect(running).toMatchObject({ state: "running", finished: false, step: 7, lastMetrics: { reward_mean: 0.5 }, gpuIndices: [2, 3] });
    const done = describeProgress(ref, "h", { launch: marker("2026-11-29T11:00:00.000Z"), status, finish: "succeeded\n", alive: false }, now);
    expect(done).toMatchObject({ state: "succeeded", finished: true });
  });

  it("ignores a finish.flag that names no final state", () => {
    const progress = describeProgress(ref, "h", { launch: marker("2026-11-29T11:00:00.000Z"), finish: "maybe", alive: true }, now);
    expect(progress.finished).toBe(false);
    expect(progress.state).toBe("launching");
  });
});

describe("parseMetricsTail", () => {
  it("keeps the last valid records and skips a torn last line", () => {
    const lines = [1, 2, 3, 4, 5, 6].map((step) => JSON.stringify({ step, time: "2026-11-29T11:00:00.000Z", reward_mean: step / 10 }));
    const records = parseMetricsTail(`${lines.join("\n")}\n{"step":7,"ti`, 3);
    expect(records.map((record) => record.step)).toEqual([4, 5, 6]);
  });
});
