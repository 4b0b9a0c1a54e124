import type { Blueprint, BlueprintMode } from "./blueprint.ts";
import { renderBlueprint } from "./render-blueprint.ts";
import { stripTrailing } from "./section-values.ts";
import { blueprintVersion } from "./front-matter-schema.ts";

export interface BlueprintTemplateOptions {
  id?: string;
  mode?: BlueprintMode;
  campaign?: string;
  /** Folder the result directory goes in; the id is appended. */
  resultRoot?: string;
}

/**
 * A filled-in blueprint that audits clean, for `a3r blueprint new`: every section holds a
 * plausible value that shows its form, so a person edits values instead of guessing syntax.
 */
export function blueprintTemplate(options: BlueprintTemplateOptions = {}): string {
  const id = options.id ?? "new-experiment";
  const mode = options.mode ?? "swarm";
  const codebase = "/opt/a3r/examples/grpo-arithmetic";
  const resultDir = `${stripTrailing(options.resultRoot ?? "/tmp/a3r-runs", "/")}/${id}`;
  const command =
    mode === "swarm"
      ? `cd ${codebase}\nnpx a3r swarm server --config configs/grpo-base.yaml &\n.venv/bin/python clients/arithmetic_client.py --episodes 2000`
      : `cd ${codebase}\n.venv/bin/python train.py --config configs/grpo-base.yaml --output ${resultDir}`;
  const blueprint: Blueprint = {
    id,
    mode,
    purpose:
      "State the hypothesis this run tests, the variables held fixed, and the one thing that\ndiffers from its sibling blueprints (e.g. only the learning rate).",
    codebase,
    venv: `${codebase}/.venv/bin/python`,
    config: `${codebase}/configs/grpo-base.yaml`,
    command,
    resultDir,
    timeBudgetMs: 4 * 3_600_000,
    timeBudget: "4h",
    notes:
      "- Preparation: what must be true before launch.\n- Cleanup: what to remove afterwards.\n- Expectation: what result would support or reject the hypothesis.",
    frontMatter: {
      a3r: blueprintVersion,
      id,
      campaign: options.campaign ?? "my-campaign",
      stage: 1,
      mode,
      hypothesis: "H1",
      gpus: 1,
      seed: 1,
      first_signal_timeout: "20m",
      metric: { name: "reward_mean", goal: "maximize" },
      prediction: "reward_mean at the last step >= 0.60 (baseline ~0.45)",
      overrides: { lr: 3.0e-6 },
    },
    format: "a3r",
    lines: {},
  };
  return renderBlueprint(blueprint);
}
