import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parse } from "yaml";
import { campaignPaths } from "../campaign/index.ts";
import type { StageDecisionAnswer } from "../leader/planners/llm/answers.ts";
import { convertDecision, knobsOf } from "../leader/planners/llm/stage-plan.ts";
import type { BlueprintText } from "../leader/domain/planner.ts";
import { parseTopic } from "../leader/domain/topic.ts";
import { draftStageBlueprints } from "../leader/design/write-blueprints.ts";

/**
 * Model scripts for whole campaigns under the `scripted` provider
 * (leader/__fixtures__/llm-campaigns/*.yaml). A model that rewrites blueprints must give
 * back complete files, and those name the campaign's paths, which only exist once a test
 * has chosen its temp folder. So a fixture writes a blueprint answer as a recipe, in the
 * `markdown` field, and `renderCampaignScript` replaces it with the draft the leader will
 * render for stage 1 (computed here the same way: the fixture's stage-1 plan answer,
 * converted by the planner's own code, drafted by leader/design/write-blueprints.ts):
 *
 * - `@draft` — the draft as it is;
 * - `@draft note=<text>` — the draft with one more line in its Additional Notes;
 * - `@draft bad` — the draft with a relative codebase path and `rm -rf /` as its command
 *   (two audit errors, and a command the base experiment does not have);
 * - `@draft command=<line>` — the draft with this command (allowed, but not the base's).
 *
 * The stage-1 plan answer is the step whose `match.lastUserMessage` is "Plan stage 1".
 */
export const llmCampaignFixtures = new URL("../leader/planners/llm/__fixtures__/llm-campaigns/", import.meta.url);

interface FixtureStep {
  match?: { role?: string; lastUserMessage?: string };
  parsed?: unknown;
  [key: string]: unknown;
}

export interface RenderedScript {
  /** The script file written (JSON, which the scripted provider reads as YAML). */
  file: string;
  /** The stage-1 drafts the recipes were rendered from, by blueprint id. */
  drafts: BlueprintText[];
}

/**
 * Reads a fixture, renders its blueprint recipes for the campaign `campaignId` in `runsDir`
 * run from the topic text `topicText`, substitutes `{{name}}` placeholders in every string
 * from `values`, and writes the script to `<dir>/model-script.json`.
 */
export async function renderCampaignScript(
  fixture: string,
  options: { dir: string; runsDir: string; campaignId: string; topicText: string; values?: Record<string, string> },
): Promise<RenderedScript> {
  const raw = substitute(parse(await readFile(new URL(fixture, llmCampaignFixtures), "utf8")) as unknown, options.values ?? {}) as {
    mode?: string;
    steps: FixtureStep[];
  };
  const topic = parseTopic(options.topicText);
  const planStep = raw.steps.find((step) => step.match?.lastUserMessage === "Plan stage 1");
  if (!planStep) throw new Error(`${fixture}: no step with match.lastUserMessage "Plan stage 1"`);
  const converted = convertDecision(
    planStep.parsed as StageDecisionAnswer,
    { topic, history: [], usage: { gpuHours: 0, wallTimeMs: 0 } },
    knobsOf(topic, undefined),
  );
  if (!converted.ok || converted.step.kind !== "stage") throw new Error(`${fixture}: the stage-1 plan answer does not convert: ${JSON.stringify(converted)}`);
  const drafts = draftStageBlueprints(topic, converted.step.plan, campaignPaths(options.runsDir, options.campaignId));
  const steps = raw.steps.map((step) => renderRecipes(step, drafts));
  const file = join(options.dir, "model-script.json");
  await writeFile(file, `${JSON.stringify({ ...raw, steps }, null, 2)}\n`);
  return { file, drafts };
}

function renderRecipes(step: FixtureStep, drafts: BlueprintText[]): FixtureStep {
  const parsed = step.parsed as { blueprints?: { blueprintId: string; markdown: string }[] } | undefined;
  if (!parsed?.blueprints) return step;
  return {
    ...step,
    parsed: {
      ...parsed,
      blueprints: parsed.blueprints.map((item) => {
        const draft = drafts.find((candidate) => candidate.blueprintId === item.blueprintId);
        if (!draft || !item.markdown.startsWith("@draft")) return item;
        return { blueprintId: item.blueprintId, markdown: applyRecipe(draft.text, item.markdown.slice("@draft".length).trim()) };
      }),
    },
  };
}

function applyRecipe(text: string, recipe: string): string {
  if (recipe === "") return text;
  if (recipe.startsWith("note=")) return text.replace(/(## Additional Notes\n\n)/, `$1- ${recipe.slice("note=".length)}\n`);
  if (recipe === "bad") {
    return text
      .replace(/## Codebase\n\n`[^`]+`/, "## Codebase\n\n`trainer-code`")
      .replace(/## Command\n\n```bash\n[^\n]*\n```/, "## Command\n\n```bash\nrm -rf /\n```");
  }
  if (recipe.startsWith("command="))
    return text.replace(/## Command\n\n```bash\n[^\n]*\n```/, `## Command\n\n\`\`\`bash\n${recipe.slice("command=".length)}\n\`\`\``);
  throw new Error(`unknown blueprint recipe "@draft ${recipe}"`);
}

function substitute(value: unknown, values: Record<string, string>): unknown {
  if (typeof value === "string") {
    return value.replace(/\{\{(\w+)\}\}/g, (whole, name: string) => {
      if (!(name in values)) throw new Error(`fixture placeholder ${whole} has no value`);
      return values[name]!;
    });
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, values));
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substitute(item, values)]));
  return value;
}
