import { mkdir, readFile } from "node:fs/promises";
import { A3rError } from "../../core/errors.ts";
import { writeFileAtomic } from "../../core/atomic-file.ts";
import { parseDuration } from "../../core/duration.ts";
import { auditBlueprint, blueprintVersion, renderBlueprint } from "../../blueprints/index.ts";
import type { Blueprint, Finding } from "../../blueprints/index.ts";
import type { CampaignPaths } from "../../campaign/index.ts";
import { formatNumber } from "../domain/configurations.ts";
import { scoreLabel } from "../domain/score-label.ts";
import type { BlueprintText, StagePlan } from "../domain/planner.ts";
import type { Topic } from "../domain/topic.ts";

/**
 * Turns a stage plan into a3r blueprints, one per planned experiment, written to
 * `stages/<n>/blueprints/<id>.md` with their result directory at `results/<id>/`.
 *
 * Every knob's value (not only the delta) goes into `overrides`, with the seed under the
 * topic's `seed_key` and the base experiment's fixed overrides first, so a run never
 * depends on what the config file happens to hold for a knob. Writing is idempotent: a
 * blueprint already on disk with the same text is left alone, and one with different
 * text is refused (it may already be running; a changed plan needs a new stage).
 */
export interface WrittenBlueprint {
  blueprintId: string;
  file: string;
  blueprint: Blueprint;
  findings: Finding[];
}

/** Builds the blueprints of a stage without writing them. Pure. */
export function buildStageBlueprints(topic: Topic, plan: StagePlan, paths: CampaignPaths): Blueprint[] {
  const base = topic.base;
  const metric = topic.metric;
  if (!base || !metric)
    throw new A3rError("TOPIC_INVALID", "the topic has no base experiment or metric to write blueprints from", {
      hint: "add `base:` and `metric:` to the topic's front matter",
    });
  const timeBudgetMs = parseDuration(base.time_budget) ?? Number.NaN;
  return plan.experiments.map((experiment) => {
    const configuration = plan.configurations.find((item) => item.id === experiment.configurationId);
    if (!configuration)
      throw new A3rError("INTERNAL", `stage ${plan.stage} plans ${experiment.blueprintId} for an unknown configuration ${experiment.configurationId}`);
    const hypothesis = plan.hypotheses.find((item) => item.id === configuration.hypothesis);
    const overrides = { ...base.overrides, ...configuration.settings, [base.seed_key]: experiment.seed };
    const siblings = plan.configurations.filter((item) => item.id !== configuration.id).map((item) => item.id);
    const frontMatter: Record<string, unknown> = {
      ...base.blueprint,
      a3r: blueprintVersion,
      id: experiment.blueprintId,
      campaign: paths.id,
      stage: plan.stage,
      mode: base.mode,
      hypothesis: configuration.hypothesis,
      gpus: base.gpus,
      seed: experiment.seed,
      ...(base.first_signal_timeout === undefined ? {} : { first_signal_timeout: base.first_signal_timeout }),
      metric: { name: metric.name, goal: metric.goal },
      prediction: configuration.prediction.text,
      overrides,
      configuration: configuration.id,
      // The campaign's own command rules travel with each blueprint, so the worker holds
      // its command (and its diagnosis) to them on any host.
      ...(topic.commands.rules.length === 0 ? {} : { command_rules: topic.commands.rules }),
      // And its allow patterns: a command a worker's diagnosis proposes runs without a person
      // only if each new line matches one (worker/rules/command-approval.ts).
      ...(topic.commands.allow.length === 0 ? {} : { command_allow: topic.commands.allow }),
    };
    const settingsText = Object.entries(configuration.settings)
      .map(([name, value]) => `${name}=${String(value)}`)
      .join(", ");
    return {
      id: experiment.blueprintId,
      mode: base.mode,
      purpose: [
        `Stage ${plan.stage} (${plan.kind}), configuration \`${configuration.id}\` (${settingsText}), seed ${experiment.seed}: ${configuration.purpose}.`,
        `Hypothesis ${configuration.hypothesis}: ${hypothesis?.statement ?? "(not stated)"}.`,
        `Controlled: every other setting of the base configuration, the time budget and the seeds (1..${topic.seeds}); siblings in this stage: ${siblings.length > 0 ? siblings.join(", ") : "none"}.`,
        `Prediction (judged across seeds on ${scoreLabel(metric)}): ${configuration.prediction.text}.`,
      ].join("\n\n"),
      codebase: base.codebase,
      venv: base.interpreter,
      config: base.config,
      command: base.command.trimEnd(),
      resultDir: paths.result(experiment.blueprintId),
      timeBudgetMs,
      timeBudget: String(base.time_budget),
      notes: [
        `- Written by the a3r leader for campaign ${paths.id}: "${topic.title}".`,
        `- Overrides (the worker applies them to a copy of the config): ${Object.entries(overrides)
          .map(([name, value]) => `${name}=${String(value)}`)
          .join(", ")}.`,
        `- The seed is set through the override \`${base.seed_key}\`.`,
        ...(configuration.prediction.level === undefined ? [] : [`- Reference level: ${formatNumber(configuration.prediction.level)}.`]),
      ].join("\n"),
      frontMatter,
      format: "a3r",
      file: paths.stage(plan.stage).blueprint(experiment.blueprintId),
      lines: {},
    } satisfies Blueprint;
  });
}

/** The stage's blueprints as the graph renders them from the topic's base (pure). */
export function draftStageBlueprints(topic: Topic, plan: StagePlan, paths: CampaignPaths): BlueprintText[] {
  return buildStageBlueprints(topic, plan, paths).map((blueprint) => ({ blueprintId: blueprint.id, text: renderBlueprint(blueprint) }));
}

/**
 * Writes the stage's blueprints and audits each written text; returns them with their
 * findings (the caller decides whether an error finding stops the stage).
 */
export async function writeStageBlueprints(topic: Topic, plan: StagePlan, paths: CampaignPaths): Promise<WrittenBlueprint[]> {
  const blueprints = buildStageBlueprints(topic, plan, paths);
  const texts = blueprints.map((blueprint) => ({ blueprintId: blueprint.id, text: renderBlueprint(blueprint) }));
  const files = await writeBlueprintTexts(paths, plan.stage, texts);
  return blueprints.map((blueprint, index) => ({
    blueprintId: blueprint.id,
    file: files[index]!,
    blueprint,
    findings: auditBlueprint(texts[index]!.text, { file: files[index]!, allowedRoots: [paths.results] }),
  }));
}

/**
 * Writes blueprint texts into `stages/<n>/blueprints/<id>.md`, idempotently: a file that
 * exists with the same text is left alone; one with different text is refused, because a
 * written blueprint may already be running. Returns the files in the order given.
 */
export async function writeBlueprintTexts(paths: CampaignPaths, stageNumber: number, texts: readonly BlueprintText[]): Promise<string[]> {
  const stage = paths.stage(stageNumber);
  await mkdir(stage.blueprints, { recursive: true });
  const files: string[] = [];
  for (const { blueprintId, text } of texts) {
    const file = stage.blueprint(blueprintId);
    const existing = await readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return undefined;
      throw error;
    });
    if (existing === undefined) await writeFileAtomic(file, text);
    else if (existing !== text) {
      throw new A3rError("BLUEPRINT_INVALID", `${file} already exists with different content`, {
        where: file,
        hint: "a written blueprint may already be running: plan the change as a new stage instead of rewriting it",
      });
    }
    files.push(file);
  }
  return files;
}
