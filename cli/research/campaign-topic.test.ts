import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { applyOverrides, checkOverrides, readConfigFile } from "../../blueprints/index.ts";
import { decideMeasurement, reproducibilityOf, withMeasurement } from "../../leader/design/measurement-protocol.ts";
import { parseTopic } from "../../leader/index.ts";
import { measurementLine } from "../../leader/report/measurement-line.ts";
import { swarmConfigSchema } from "../../swarm/schema.ts";

/**
 * Which topics the leader compares on the swarm server's fixed-protocol evaluation, read
 * off the real swarm config schema's `measures` marks, and that the overrides it plans are
 * ones the server's schema accepts.
 */
const root = join(import.meta.dirname, "../..");
const configFile = join(root, "examples/blueprints/swarm-demo.swarm.yaml");

function topic(knobs: string, metric = "{ name: rollout_reward_mean, goal: maximize, score: area }", extra = "") {
  return parseTopic(`---
metric: ${metric}
base: { mode: swarm, codebase: ${root}, interpreter: node, config: ${configFile}, command: "node x.js {swarm_url}", overrides: { max_steps: 20 } }
knobs:
  ${knobs}
seeds: 2
${extra}
---
Which value is best?
`);
}

describe("the measurement protocol a campaign plans", () => {
  it("moves a temperature topic to fixed-protocol eval episodes at the base's sampling, with overrides the server accepts", async () => {
    const engine = { schema: swarmConfigSchema, config: await readConfigFile(configFile) };
    const decision = decideMeasurement(topic("temperature: [1, 0.5, 0.3]", undefined, "early_stop: { rungs: [0.25, 0.5], keep: 0.5 }"), engine);
    expect(decision.protocol).toMatchObject({
      trainingMetric: "rollout_reward_mean",
      metric: "protocol_eval_reward_mean",
      knobs: [{ knob: "temperature", field: "sampling.temperature" }],
      every: 5,
      atSteps: [5, 10, 15, 20],
      episodes: 64,
      sampling: { temperature: 1, top_p: 1, max_tokens: 8 },
    });
    const measured = withMeasurement(topic("temperature: [1, 0.5, 0.3]"), decision);
    expect(measured.metric?.name).toBe("protocol_eval_reward_mean");
    const overrides = { ...measured.base!.overrides, temperature: 0.3, seed: 4 };
    expect(checkOverrides(engine, overrides)).toEqual([]);
    const config = swarmConfigSchema.parse(applyOverrides(engine.config, overrides, swarmConfigSchema));
    // The run trains at 0.3 and is measured at the base's 1.
    expect(config.sampling.temperature).toBe(0.3);
    expect(config.eval_protocol).toMatchObject({ every: 5, episodes: 64, sampling: { temperature: 1, top_p: 1, max_tokens: 8 } });
    expect(measurementLine(measured)).toMatch(
      /compared on protocol_eval_reward_mean, not rollout_reward_mean: 64 fixed-protocol eval episodes after steps 5, 10, 15, 20/,
    );
  });

  it("keeps the training metric for knobs that do not change the measurement, and says why where it cannot plan one", async () => {
    const engine = { schema: swarmConfigSchema, config: await readConfigFile(configFile) };
    expect(decideMeasurement(topic("lr: [0.2, 0.5]"), engine)).toEqual({});
    expect(measurementLine(withMeasurement(topic("lr: [0.2, 0.5]"), {}))).toMatch(/same training metric \(rollout_reward_mean\)/);
    const training = decideMeasurement(topic("top_p: [1, 0.8]", "{ name: rollout_reward_mean, goal: maximize, protocol: training }"), engine);
    expect(training).toEqual({ caveat: expect.stringMatching(/metric.protocol: training keeps rollout_reward_mean although top_p change/) });
    const other = decideMeasurement(topic("temperature: [1, 0.5]", "{ name: success_rate, goal: maximize }"), engine);
    expect(other.caveat).toMatch(/exists only for a swarm run's reward/);
    expect(measurementLine(withMeasurement(topic("temperature: [1, 0.5]"), other))).toMatch(/a greedier sampler can score higher by itself/);
    // No schema to ask: the knob's name.
    expect(decideMeasurement(topic("temperature: [1, 0.5]"), undefined).caveat).toMatch(/temperature \(by its name\)/);
  });

  it("says whether a seed reproduces a run, from the base config", async () => {
    const engine = { schema: swarmConfigSchema, config: await readConfigFile(configFile) };
    // swarm-demo.swarm.yaml: the embedded engine with deterministic: true.
    expect(reproducibilityOf(topic("lr: [0.2, 0.5]"), engine)).toMatch(/same curve whatever the machine's load/);
    const off = parseTopic(
      `---\nmetric: { name: rollout_reward_mean, goal: maximize }\nbase: { mode: swarm, codebase: ${root}, interpreter: node, config: ${configFile}, command: "node x.js", overrides: { deterministic: false } }\nknobs:\n  lr: [0.2, 0.5]\n---\nq\n`,
    );
    expect(reproducibilityOf(off, engine)).toMatch(/deterministic is off, so a run's curve also depends on how its clients interleave/);
    const vllm = { ...engine, config: { ...engine.config, model: { kind: "vllm", model: "Qwen/Qwen2.5-0.5B" } } };
    expect(reproducibilityOf(topic("lr: [0.2, 0.5]"), vllm)).toMatch(/the vllm engine is not bit-reproducible/);
  });
});
