import { mkdir, readFile } from "node:fs/promises";
import { z } from "zod";
import { writeRedactedFile } from "../../core/redact.ts";
import { A3rError } from "../../core/errors.ts";
import type { CampaignPaths } from "../../campaign/index.ts";
import type { StagePlan } from "../domain/planner.ts";

/**
 * `stages/<n>/plan.md`: the stage plan for a person (rationale, hypotheses, each
 * configuration with its prediction, the decision each outcome leads to) and, at the end,
 * the same plan as a fenced JSON block so a program can read it back without the graph.
 */
const marker = "<!-- a3r stage plan: the JSON below is the plan the leader acts on -->";

export function renderStagePlan(plan: StagePlan, title: string): string {
  const lines = [
    `# Stage ${plan.stage} plan (${plan.kind}): ${title}`,
    "",
    plan.rationale.charAt(0).toUpperCase() + plan.rationale.slice(1) + ".",
    "",
    "## Hypotheses",
    "",
    ...plan.hypotheses.map((hypothesis) => `- **${hypothesis.id}**: ${hypothesis.statement}`),
    "",
    "## Configurations",
    "",
    "| configuration | delta from baseline | hypothesis | prediction | blueprints |",
    "| --- | --- | --- | --- | --- |",
    ...plan.configurations.map((configuration) => {
      const delta =
        Object.entries(configuration.delta)
          .map(([name, value]) => `${name}=${String(value)}`)
          .join(", ") || "(baseline)";
      const ids = plan.experiments
        .filter((experiment) => experiment.configurationId === configuration.id)
        .map((experiment) => `\`${experiment.blueprintId}\``)
        .join(" ");
      return `| ${configuration.id} | ${delta} | ${configuration.hypothesis} | ${configuration.prediction.text.replaceAll("|", "\\|")} | ${ids} |`;
    }),
    "",
    "## Decisions",
    "",
    ...plan.decisions.map((decision) => `- If ${decision.outcome}: ${decision.decision}.`),
    "",
    marker,
    "",
    "```json",
    JSON.stringify(plan, null, 2),
    "```",
    "",
  ];
  return lines.join("\n");
}

const stagePlanSchema = z.looseObject({
  stage: z.int().positive(),
  kind: z.enum(["screen", "refine", "replicate"]),
  configurations: z.array(z.looseObject({ id: z.string() })),
  experiments: z.array(z.looseObject({ blueprintId: z.string(), configurationId: z.string(), seed: z.int() })),
});

export function parseStagePlan(text: string, file: string): StagePlan {
  const start = text.indexOf(marker);
  const block = start === -1 ? undefined : /```json\n([\s\S]*?)\n```/.exec(text.slice(start))?.[1];
  if (block === undefined)
    throw new A3rError("SCHEMA_INVALID", `${file} holds no stage plan JSON block`, {
      where: file,
      hint: "plan.md is written by the leader; plan the stage again",
    });
  let data: unknown;
  try {
    data = JSON.parse(block);
  } catch (error) {
    throw new A3rError("SCHEMA_INVALID", `${file}: the stage plan JSON is not valid: ${(error as Error).message}`, {
      where: file,
      hint: "restore plan.md or plan the stage again",
    });
  }
  const checked = stagePlanSchema.safeParse(data);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    throw new A3rError("SCHEMA_INVALID", `${file}: stage plan field ${issue.path.join(".")}: ${issue.message}`, {
      where: file,
      hint: "restore plan.md or plan the stage again",
    });
  }
  return data as StagePlan;
}

export async function writeStagePlan(paths: CampaignPaths, plan: StagePlan, title: string): Promise<string> {
  const stage = paths.stage(plan.stage);
  await mkdir(stage.root, { recursive: true });
  await writeRedactedFile(stage.plan, renderStagePlan(plan, title));
  return stage.plan;
}

export async function readStagePlan(paths: CampaignPaths, stage: number): Promise<StagePlan> {
  const file = paths.stage(stage).plan;
  return parseStagePlan(await readFile(file, "utf8"), file);
}
