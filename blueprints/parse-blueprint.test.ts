import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { analyzeBlueprint, parseBlueprint, toSafeId } from "./parse-blueprint.ts";
import { auditBlueprint } from "./audit-blueprint.ts";

const example = (name: string): string => readFileSync(new URL(`../examples/blueprints/${name}`, import.meta.url), "utf8");

const sameExperiment = {
  id: "grpo-lr-3e-6",
  mode: "swarm",
  codebase: "/opt/a3r/examples/grpo-arithmetic",
  venv: "/opt/a3r/examples/grpo-arithmetic/.venv/bin/python",
  config: "/opt/a3r/examples/grpo-arithmetic/configs/grpo-base.yaml",
  resultDir: "/tmp/a3r-runs/grpo-lr-3e-6",
  timeBudget: "4h",
  timeBudgetMs: 4 * 3_600_000,
};

describe("parseBlueprint, a3r form", () => {
  const blueprint = parseBlueprint(example("grpo-lr-3e-6.md"), "grpo-lr-3e-6.md");

  it("reads every section into its field", () => {
    expect(blueprint).toMatchObject({ ...sameExperiment, format: "a3r", file: "grpo-lr-3e-6.md" });
    expect(blueprint.purpose).toMatch(/^Test hypothesis H2/);
    expect(blueprint.command.split("\n")).toHaveLength(3);
    expect(blueprint.command).toMatch(/^cd \/opt\/a3r\/examples\/grpo-arithmetic\nnpx a3r swarm server/);
    expect(blueprint.notes).toMatch(/^- Preparation/);
  });

  it("keeps every front-matter field with its type", () => {
    expect(blueprint.frontMatter).toEqual({
      a3r: "blueprint/v1",
      id: "grpo-lr-3e-6",
      campaign: "grpo-batching",
      stage: 1,
      mode: "swarm",
      hypothesis: "H2",
      gpus: 1,
      seed: 1,
      first_signal_timeout: "20m",
      metric: { name: "reward_mean", goal: "maximize" },
      prediction: "reward_mean at the last step >= 0.60 (baseline ~0.45)",
      overrides: { lr: 3e-6 },
    });
  });

  it("records the line of each section and field", () => {
    expect(blueprint.lines).toMatchObject({
      frontMatter: 1,
      id: 3,
      mode: 6,
      "metric.goal": 11,
      title: 15,
      purpose: 17,
      command: 36,
      "command.value": 39,
      resultDir: 44,
    });
  });
});

describe("parseBlueprint, AgentJet form", () => {
  const blueprint = parseBlueprint(example("grpo-lr-3e-6.agentjet.md"), "grpo-lr-3e-6.agentjet.md");

  it("reads the same experiment as the a3r example", () => {
    const a3r = parseBlueprint(example("grpo-lr-3e-6.md"));
    expect(blueprint).toMatchObject({ ...sameExperiment, format: "agentjet", frontMatter: {} });
    for (const key of ["purpose", "command", "notes"] as const) expect(blueprint[key]).toBe(a3r[key]);
  });

  it("derives the id from the result directory, else the file name", () => {
    const text =
      "## [exp_purpose]\nP\n## [exp_codebase_dir]\n- dir: /c\n## [exp_venv_exe]\n- path: /v/python\n## [exp_yaml_path]\n- path: none\n## [exp_launch_command]\n- command: python train.py\n## [exp_result_dir]\n- dir: /runs/Exp LR 1e-5/\n## [exp_max_time]\n90 minutes\n";
    const parsed = parseBlueprint(text, "/somewhere/blueprint.md");
    expect(parsed).toMatchObject({
      id: "exp-lr-1e-5",
      mode: "classic",
      config: null,
      command: "python train.py",
      resultDir: "/runs/Exp LR 1e-5/",
      timeBudgetMs: 90 * 60_000,
    });
    const noResult = analyzeBlueprint(text.replace("- dir: /runs/Exp LR 1e-5/", ""), "/x/S2 Batch 64.agentjet.md");
    expect(noResult.blueprint!.id).toBe("s2-batch-64");
  });

  it("reads the mode from the command: swarm when it mentions swarm", () => {
    const text = "## [exp_launch_command]\n- command: `npx a3r swarm client --episodes 10`\n";
    expect(analyzeBlueprint(text).blueprint).toMatchObject({ mode: "swarm", command: "npx a3r swarm client --episodes 10" });
  });

  it("finds an absolute path in free text and numbered headings", () => {
    const text = "## 2. [exp_codebase_dir] Main code path (absolute path)\nThe code lives in /mnt/data/project, cd there first.\n";
    expect(analyzeBlueprint(text).blueprint!.codebase).toBe("/mnt/data/project");
  });
});

describe("parseBlueprint details", () => {
  const base = example("grpo-lr-3e-6.md");

  it("never cuts a section at a ## line inside a fenced block", () => {
    const text = base.replace("cd /opt/a3r/examples/grpo-arithmetic\n", "## step 1: go to the code\ncd /opt/a3r/examples/grpo-arithmetic\n");
    const parsed = parseBlueprint(text);
    expect(parsed.command.split("\n")[0]).toBe("## step 1: go to the code");
  });

  it("reads CRLF files with the same lines", () => {
    const parsed = parseBlueprint(base.replace(/\n/g, "\r\n"));
    expect(parsed.command).not.toContain("\r");
    expect(parsed.lines.command).toBe(36);
  });

  it("reads Configuration: none as null", () => {
    const text = base.replace("`/opt/a3r/examples/grpo-arithmetic/configs/grpo-base.yaml`", "None (the defaults are built into the code)");
    expect(parseBlueprint(text).config).toBeNull();
  });

  it("reads time budgets written in words", () => {
    for (const [written, ms] of [
      ["90m", 5_400_000],
      ["1h30m", 5_400_000],
      ["4 hours", 14_400_000],
      ["2h (hard kill)", 7_200_000],
      ["`45m`", 2_700_000],
    ] as const) {
      expect(parseBlueprint(base.replace("\n4h\n", `\n${written}\n`)).timeBudgetMs).toBe(ms);
    }
    expect(analyzeBlueprint(base.replace("\n4h\n", "\n4\n")).problems.map((item) => item.code)).toEqual(["TIME_BUDGET_INVALID"]);
  });

  it("keeps an unknown section's text with the notes and warns", () => {
    const { blueprint, problems } = analyzeBlueprint(`${base}\n## Results\n\nTo be filled in.\n`);
    expect(blueprint!.notes).toMatch(/reject H2\.\n\n## Results\n\nTo be filled in\.$/);
    expect(problems).toEqual([expect.objectContaining({ code: "SECTION_UNKNOWN", severity: "warning" })]);
  });

  it("throws an A3rError naming the file and line of the first error", () => {
    const text = base.replace("gpus: 1", "gpus: two").replace("## Time Budget\n\n4h", "## Time Budget\n\nsoon");
    expect(() => parseBlueprint(text, "bp.md")).toThrow(
      expect.objectContaining({ code: "SCHEMA_INVALID", where: "bp.md:8", hint: expect.stringContaining("whole number") }),
    );
  });

  it("turns names into safe ids", () => {
    expect(toSafeId("S1 LR=3e-6")).toBe("s1-lr-3e-6");
    expect(toSafeId("..hidden")).toBe("hidden");
    expect(toSafeId("中文")).toBe("");
    expect(toSafeId("a".repeat(100))).toHaveLength(80);
  });
});

describe("parseBlueprint, AlphaAutoResearch's annotated template", () => {
  // The template gives each [exp_*] section `- description:` and `- hint:` bullets (with
  // example paths and commands of their own), numbered `- content N:` and `- warning N:`
  // bullets, and the time budget as `- content: 6 hours; ...`.
  const text = readFileSync(new URL("./__fixtures__/alpha-template/annotated.agentjet.md", import.meta.url), "utf8");
  const blueprint = parseBlueprint(text, "/lab/blueprints/annotated.agentjet.md");

  it("takes each section's value bullet, never a description's or a hint's example", () => {
    expect(blueprint).toMatchObject({
      format: "agentjet",
      codebase: "/opt/lab/ppo-math",
      venv: "/opt/lab/ppo-math/.venv/bin/python",
      config: "/opt/lab/ppo-math/configs/epochs-2.yaml",
      command: "cd /opt/lab/ppo-math && .venv/bin/python train.py --config configs/epochs-2.yaml",
      resultDir: "/tmp/a3r-runs/ppo-epochs-2",
      timeBudgetMs: 6 * 3_600_000,
    });
    expect(blueprint.purpose).toMatch(/PPO epoch count of 2/);
    expect(blueprint.notes).toMatch(/kl loss value/);
  });

  it("passes the audit (the description's sample command is not the command)", () => {
    const errors = auditBlueprint(text, { file: "/lab/blueprints/annotated.agentjet.md" }).filter((finding) => finding.severity === "error");
    expect(errors).toEqual([]);
  });
});
