import { describe, expect, it } from "vitest";
import { compileLogMetricPatterns, parseMetricLine } from "./log-metrics.ts";

describe("parseMetricLine", () => {
  it("reads verl / AgentJet step lines, keys with slashes included", () => {
    expect(parseMetricLine("step:12 - reward_mean:0.41 - actor/kl:2e-3 - critic/score/mean:-0.5")).toEqual({
      step: 12,
      values: { reward_mean: 0.41, "actor/kl": 0.002, "critic/score/mean": -0.5 },
    });
  });

  it("reads key=value pairs with a step", () => {
    expect(parseMetricLine("[train] step=7 loss=0.31, lr=3e-6 | grad_norm=1.5")).toEqual({
      step: 7,
      values: { loss: 0.31, lr: 3e-6, grad_norm: 1.5 },
    });
  });

  it("reads JSON lines with step or global_step", () => {
    expect(parseMetricLine('{"step": 3, "reward": 0.5, "note": "x", "time": 17}')).toEqual({ step: 3, values: { reward: 0.5 } });
    expect(parseMetricLine('{"global_step": 4, "loss": 1}')).toEqual({ step: 4, values: { loss: 1 } });
  });

  it("keeps NaN and inf so the failure classifier can see them", () => {
    const point = parseMetricLine("step:5 - loss:nan - grad_norm:inf");
    expect(point?.step).toBe(5);
    expect(Number.isNaN(point?.values.loss)).toBe(true);
    expect(point?.values.grad_norm).toBe(Number.POSITIVE_INFINITY);
  });

  it("ignores lines without a step or without numbers", () => {
    expect(parseMetricLine("Loading checkpoint shards: 100%")).toBeUndefined();
    expect(parseMetricLine("step:3 - phase:warmup")).toBeUndefined();
    expect(parseMetricLine('{"reward": 1}')).toBeUndefined();
    expect(parseMetricLine("{not json}")).toBeUndefined();
  });

  it("accepts extra patterns as data", () => {
    const compiled = compileLogMetricPatterns([{ name: "iteration", line: String.raw`^Iter (?<step>\d+):`, pair: String.raw`(?<key>\w+) (?<value>[\d.]+)` }]);
    expect(parseMetricLine("Iter 9: acc 0.75", compiled)).toEqual({ step: 9, values: { acc: 0.75 } });
  });
});

describe("parseMetricLine after a progress bar", () => {
  it("reads a step printed right after tqdm's text (stderr's bar, stdout's metric, one line)", () => {
    expect(parseMetricLine(" 30%|███       | 3/10 [00:00<00:01,  9.52it/s]step:3 - reward_mean:0.45 - loss:0.25")).toEqual({
      step: 3,
      values: { reward_mean: 0.45, loss: 0.25 },
    });
    expect(parseMetricLine("100%|██████████| 10/10 [00:01<00:00, 9.5it/s, loss=0.4]step=7 loss=0.31")).toEqual({ step: 7, values: { loss: 0.31 } });
    expect(parseMetricLine('12/40 [00:03, 4.1it/s]{"step": 12, "reward": 0.5}')).toEqual({ step: 12, values: { reward: 0.5 } });
  });

  it("reads a step behind a progress bar's terminal sequences (erase line, cursor up, colours)", () => {
    expect(parseMetricLine("\u001b[A\u001b[2K 40%|\u001b[32m████\u001b[0m| 4/10 [00:00<00:01]\u001b[Kstep:4 - loss:0.2")).toEqual({
      step: 4,
      values: { loss: 0.2 },
    });
  });

  it("still needs the step to stand alone: not inside another name", () => {
    expect(parseMetricLine("mystep:3 - loss:0.1")).toBeUndefined();
    expect(parseMetricLine("warmup_step=3 loss=0.1")).toBeUndefined();
    expect(parseMetricLine("global_step=4 loss=0.1")).toEqual({ step: 4, values: { loss: 0.1 } });
  });

  it("reads a metric at the end of a cut line (start … end) and ignores the junk before it", () => {
    const dump = "[0.125, 0.25, 0.5]".repeat(2_000);
    expect(parseMetricLine(`${dump} … ${dump}step:9 - reward_mean:0.75 - loss:0.1`)).toEqual({
      step: 9,
      values: { reward_mean: 0.75, loss: 0.1 },
    });
  });
});
