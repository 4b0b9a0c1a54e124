import { describe, expect, it } from "vitest";
import type { Blueprint } from "../../blueprints/index.ts";
import { clientCommands, configCopyPath, interpreterPath, planAttempt, processEnv } from "./attempt-plan.ts";
import { workerSettingsOf } from "../rules/worker-settings.ts";

function blueprint(fields: Partial<Blueprint> = {}): Blueprint {
  return {
    id: "b1",
    mode: "classic",
    purpose: "p",
    codebase: "/code",
    venv: "/code/.venv/bin/python",
    config: "/code/cfg.yaml",
    command: "python train.py --config {config} {overrides} --port {port}",
    resultDir: "/runs/b1",
    timeBudgetMs: 60_000,
    timeBudget: "1m",
    notes: "",
    frontMatter: { a3r: "blueprint/v1", id: "b1", mode: "classic" },
    format: "a3r",
    lines: {},
    ...fields,
  };
}

const base = (bp: Blueprint) => ({
  blueprint: bp,
  resultDir: "/runs/b1",
  settings: workerSettingsOf(bp, "/runs/b1"),
  attempt: 2,
  overrides: { lr: 0.0005, port: 8081 },
  command: bp.command,
  resume: true,
  configCopy: configCopyPath("/runs/b1", 2, bp.config),
  gpus: "0,1",
  a3rBin: "/a3r/bin/a3r.js",
  nodeExecutable: "/usr/bin/node",
});

describe("planAttempt", () => {
  it("refuses a port that is not a port number before it reaches the shell (a diagnosis may set it from a log)", () => {
    for (const port of ["1 ; curl -s http://127.0.0.1:9/x | sh ; touch FILE", "8080", 0, 70000, 80.5, true]) {
      expect(() => planAttempt({ ...base(blueprint()), overrides: { port } }), String(port)).toThrow(/override port=.* is not a port number/);
    }
  });

  it("fills the placeholders and the environment of a classic attempt", () => {
    const plan = planAttempt(base(blueprint()));
    expect(plan.commands).toEqual(["python train.py --config /runs/b1/config/attempt-2.yaml lr=0.0005 port=8081 --port 8081"]);
    expect(plan.cwd).toBe("/code");
    expect(plan.env).toMatchObject({
      A3R_ATTEMPT: "2",
      A3R_RESUME: "1",
      A3R_CONFIG: "/runs/b1/config/attempt-2.yaml",
      A3R_PORT: "8081",
      CUDA_VISIBLE_DEVICES: "0,1",
      A3R_CHECKPOINT_DIR: "/runs/b1/checkpoints",
      A3R_METRICS_FILE: "/runs/b1/logs/run-metrics.jsonl",
      A3R_OVERRIDES: '{"lr":0.0005,"port":8081}',
    });
    expect(processEnv({ PATH: "/usr/bin", HOME: "/h" }, plan, "/code/.venv/bin/python")).toMatchObject({
      PATH: "/code/.venv/bin:/usr/bin",
      HOME: "/h",
      A3R_ATTEMPT: "2",
    });
  });

  it("gives the run's seed to its programs, so the task stream varies with it", () => {
    const seeded = blueprint();
    const plan = planAttempt(base({ ...seeded, frontMatter: { ...seeded.frontMatter, seed: 3 } }));
    expect(plan.env.A3R_SEED).toBe("3");
    expect(planAttempt(base({ ...seeded, frontMatter: { ...seeded.frontMatter, seed: undefined } })).env.A3R_SEED).toBeUndefined();
  });

  it("plans a swarm server with --resume and one client per command line", () => {
    const bp = blueprint({
      mode: "swarm",
      command: "# two clients\nnode client.js --url {swarm_url} \\\n  --episodes 10\n\nnode client.js --url $A3R_SWARM_URL\n",
    });
    const plan = planAttempt({ ...base(bp), overrides: {}, swarmUrl: "http://127.0.0.1:4000" });
    expect(plan.serverCommand).toBe("/usr/bin/node /a3r/bin/a3r.js swarm serve --config /runs/b1/config/attempt-2.yaml --port 0 --resume");
    expect(plan.commands).toEqual(["node client.js --url http://127.0.0.1:4000    --episodes 10", "node client.js --url $A3R_SWARM_URL"]);
    expect(plan.env.A3R_SWARM_URL).toBe("http://127.0.0.1:4000");
    expect(plan.env.A3R_CHECKPOINT_DIR).toBe("/runs/b1/swarm/checkpoints");
  });

  it("knows where interpreters and config copies live", () => {
    expect(interpreterPath("/usr/bin/node")).toBe("/usr/bin");
    expect(interpreterPath("/opt/envs/rl")).toBe("/opt/envs/rl/bin");
    expect(configCopyPath("/r", 3, "/c/x.json")).toBe("/r/config/attempt-3.json");
    expect(configCopyPath("/r", 1, null)).toBeNull();
    expect(clientCommands("a\n  # b\n\nc")).toEqual(["a", "c"]);
  });
});

describe("workerSettingsOf", () => {
  it("reads timing knobs, metrics file, env and overrides from the front matter", () => {
    const bp = blueprint({
      frontMatter: {
        a3r: "blueprint/v1",
        id: "b1",
        mode: "classic",
        first_signal_timeout: "90s",
        metrics_file: "out/m.jsonl",
        env: { SEED: 3 },
        overrides: { lr: 1e-5 },
        worker: {
          poll_interval: "200ms",
          stall_timeout: "5m",
          log_metric_patterns: [{ name: "mine", line: "it (?<step>\\d+)", pair: "(?<key>\\w+)=(?<value>\\S+)" }],
        },
      },
    });
    const settings = workerSettingsOf(bp, "/runs/b1");
    expect(settings).toMatchObject({
      pollIntervalMs: 200,
      stallTimeoutMs: 300_000,
      firstSignalTimeoutMs: 90_000,
      metricsFile: "/code/out/m.jsonl",
      env: { SEED: "3" },
      overrides: { lr: 1e-5 },
      heartbeatIntervalMs: 10_000,
    });
    expect(settings.logMetricPatterns[0]!.name).toBe("mine");
  });

  it("names the field and the fix when a knob is wrong", () => {
    const bp = blueprint({
      file: "/b.md",
      lines: { worker: 9 },
      frontMatter: { a3r: "blueprint/v1", id: "b1", mode: "classic", worker: { stall_timeout: "soon" } },
    });
    expect(() => workerSettingsOf(bp, "/runs/b1")).toThrow(/front matter field worker\.stall_timeout: a duration such as/);
    const lapsing = blueprint({ frontMatter: { a3r: "blueprint/v1", id: "b1", mode: "classic", worker: { heartbeat_interval: "10s", lease_ttl: "15s" } } });
    expect(() => workerSettingsOf(lapsing, "/runs/b1")).toThrow(/lease_ttl .* must be at least twice/);
  });
});
