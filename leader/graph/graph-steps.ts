import { readdir, rm } from "node:fs/promises";
import { analyzeBlueprint, auditBlueprint, wholeLinePattern } from "../../blueprints/index.ts";
import { readEvents, readLedger, summarizeLedger } from "../../campaign/index.ts";
import type { CampaignPaths } from "../../campaign/index.ts";
import { A3rError } from "../../core/errors.ts";
import { parseDuration } from "../../core/duration.ts";
import { pathExists } from "../../core/path-exists.ts";
import { formatNumber } from "../domain/configurations.ts";
import type { BlueprintText, FramedQuestion, StagePlan, StageRecord } from "../domain/planner.ts";
import type { Topic } from "../domain/topic.ts";

/**
 * The pieces of the leader's nodes that are not graph wiring: the audit of blueprint texts
 * before they are written, the budget gate, and the files a review sends back (memoized
 * planner answers are leader/record/stored-answers.ts). Kept apart from graph.ts so each
 * can be read and tested alone.
 */

export interface TextFinding {
  blueprintId: string;
  line: number;
  message: string;
}

/**
 * Audits blueprint texts before they are written: each must parse, pass the blueprint
 * audit (paths, confinement, command policy) and be one of the stage's experiments; and
 * against the graph's draft of the same experiment, only the purpose, the command and the
 * notes may differ. Whatever decides what runs and what it costs (front matter: id, seed,
 * overrides, gpus, worker settings ...; codebase, interpreter, config, mode, time budget,
 * result directory) stays as the plan made it, so the budget gate and the analysis hold.
 */
export function auditBlueprintTexts(paths: CampaignPaths, stage: number, texts: readonly BlueprintText[], drafts: readonly BlueprintText[]): TextFinding[] {
  const findings: TextFinding[] = [];
  const expectedIds = drafts.map((draft) => draft.blueprintId);
  const given = new Set(texts.map((text) => text.blueprintId));
  for (const id of expectedIds) if (!given.has(id)) findings.push({ blueprintId: id, line: 0, message: `no blueprint was written for experiment ${id}` });
  for (const { blueprintId, text } of texts) {
    if (!expectedIds.includes(blueprintId)) {
      findings.push({ blueprintId, line: 0, message: `${blueprintId} is not an experiment of stage ${stage} (expected one of: ${expectedIds.join(", ")})` });
      continue;
    }
    const file = paths.stage(stage).blueprint(blueprintId);
    for (const finding of auditBlueprint(text, { file, allowedRoots: [paths.results] })) {
      if (finding.severity === "error") findings.push({ blueprintId, line: finding.line, message: finding.message });
    }
    const { blueprint } = analyzeBlueprint(text, file);
    if (blueprint === undefined) continue;
    if (blueprint.id !== blueprintId)
      findings.push({ blueprintId, line: blueprint.lines.id ?? 1, message: `the blueprint's id is ${blueprint.id}, but it is filed as ${blueprintId}` });
    if (blueprint.resultDir !== paths.result(blueprintId)) {
      findings.push({
        blueprintId,
        line: blueprint.lines["resultDir.value"] ?? blueprint.lines.resultDir ?? 0,
        message: `result directory must be ${paths.result(blueprintId)}, not ${blueprint.resultDir}`,
      });
    }
    const draft = analyzeBlueprint(drafts.find((item) => item.blueprintId === blueprintId)!.text).blueprint;
    if (draft === undefined) continue;
    for (const field of ["codebase", "venv", "config", "mode", "timeBudget"] as const) {
      if (JSON.stringify(blueprint[field]) !== JSON.stringify(draft[field])) {
        findings.push({
          blueprintId,
          line: blueprint.lines[`${field}.value`] ?? blueprint.lines[field] ?? 0,
          message: `${field} must stay ${JSON.stringify(draft[field])} as planned, not ${JSON.stringify(blueprint[field])} (a planner may change only the purpose, the command and the notes)`,
        });
      }
    }
    const keys = new Set([...Object.keys(draft.frontMatter), ...Object.keys(blueprint.frontMatter)]);
    for (const key of keys) {
      if (JSON.stringify(blueprint.frontMatter[key]) !== JSON.stringify(draft.frontMatter[key])) {
        findings.push({
          blueprintId,
          line: blueprint.lines[key] ?? 1,
          message: `front matter ${key} must stay ${JSON.stringify(draft.frontMatter[key]) ?? "absent"} as planned, not ${JSON.stringify(blueprint.frontMatter[key]) ?? "absent"}`,
        });
      }
    }
  }
  return findings;
}

/**
 * Command lines in the written blueprints that their draft (the topic's base experiment)
 * does not have, word for word, and that no pattern of the topic's `commands.allow` lets
 * through (see `allowedByPattern`): what a planner added outside the campaign's allowed
 * patterns, which a person approves before it runs. Comment lines count too: inside an
 * open quote a `#` line is no comment for the shell. (Every line has passed the command
 * policy already.)
 */
export function commandsAddedBy(drafts: readonly BlueprintText[], texts: readonly BlueprintText[], allow: readonly string[] = []): string[] {
  // Linear-time matching: the patterns are a topic's text, and a planner's lines are matched against them.
  const allowed = allow.flatMap((source) => {
    try {
      return [wholeLinePattern(source)];
    } catch {
      return []; // refused when the topic was read; a pattern that cannot compile allows nothing
    }
  });
  const linesOf = (text: string | undefined): string[] => {
    if (text === undefined) return [];
    const { blueprint } = analyzeBlueprint(text);
    return (blueprint?.command ?? "")
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== "");
  };
  const added = new Set<string>();
  for (const { blueprintId, text } of texts) {
    const known = new Set(linesOf(drafts.find((draft) => draft.blueprintId === blueprintId)?.text));
    for (const line of linesOf(text)) if (!known.has(line) && !allowedByPattern(line, allowed)) added.add(line);
  }
  return [...added];
}

/** Longest line an allow pattern is tried on: a topic's pattern must not stall the leader. */
const maxAllowedLineLength = 512;

/**
 * Whether an allow pattern lets a line through: only a plain command with its arguments,
 * whole. A line with anything the shell reads as more than words (chaining `;` `&` `|`,
 * substitution `` ` `` `$`, redirection `<` `>`, quotes, a backslash that joins lines,
 * `#`, parentheses or braces) always waits for a person, however permissive the pattern
 * (`python3 .*`, `\S+`), so a pattern cannot carry a second command.
 */
function allowedByPattern(line: string, allowed: readonly { test(line: string): boolean }[]): boolean {
  if (line.length > maxAllowedLineLength || /[;&|`$<>"'\\#(){}\n]/.test(line)) return false;
  return allowed.some((pattern) => pattern.test(line));
}

/**
 * Removes a stage's plan and blueprints after a reviewer sent it back, so the next plan
 * can reuse its number. Refuses when any of its runs has a result directory: a stage
 * that ran is never rewritten.
 */
export async function discardUndispatchedStage(paths: CampaignPaths, stage: number): Promise<void> {
  const { blueprints, plan } = paths.stage(stage);
  const names = await readdir(blueprints).catch(() => [] as string[]);
  for (const name of names) {
    const result = name.endsWith(".md") ? paths.result(name.slice(0, -3)) : undefined;
    if (result !== undefined && (await pathExists(result))) {
      throw new A3rError("REVIEW_NOT_PENDING", `stage ${stage} cannot be sent back to planning: ${result} exists (its run has started)`, {
        where: result,
        hint: `answer with --approve; a change to a stage that ran belongs in a new stage`,
      });
    }
  }
  await rm(blueprints, { recursive: true, force: true });
  await rm(plan, { force: true });
}

/** What a review is known by in events.jsonl: its stage, its point and its round. */
export interface ReviewKey {
  stage?: unknown;
  at?: unknown;
  round?: unknown;
}

/**
 * The event answering the review with this key (`review.approved` or `review.instructed`),
 * if any. The one place that matches answers to requests: the graph (an answer on record
 * after a crash), the wall-time budget and `a3r status` all ask it.
 */
export function reviewAnswerEvent<E extends ReviewKey & { kind: string }>(events: readonly E[], key: ReviewKey): E | undefined {
  return events.find(
    (event) =>
      (event.kind === "review.approved" || event.kind === "review.instructed") && event.stage === key.stage && event.at === key.at && event.round === key.round,
  );
}

/** The answer to a review already in the event log, if any. */
export async function recordedReviewAnswer(
  eventsFile: string,
  key: { stage: number; at: string; round: number },
): Promise<{ action: "approve" } | { action: "instruct"; text: string } | undefined> {
  const answered = reviewAnswerEvent((await readEvents(eventsFile)).events, key);
  if (answered === undefined) return undefined;
  return answered.kind === "review.approved" ? { action: "approve" } : { action: "instruct", text: String(answered.instruction ?? "") };
}

/**
 * Time the campaign spent waiting for reviewers (each answered `review.requested` to its
 * answer): the wall-time budget is the leader's and the runs' time, not a person's.
 */
export function reviewWaitMs(events: readonly (ReviewKey & { kind: string; time: string })[]): number {
  let total = 0;
  for (const request of events.filter((event) => event.kind === "review.requested")) {
    const answer = reviewAnswerEvent(events, request);
    if (answer) total += Math.max(0, Date.parse(answer.time) - Date.parse(request.time));
  }
  return total;
}

/** GPU-hours the campaign's runs have booked in its ledger (gpus × hours per run). */
export async function gpuHoursUsed(paths: CampaignPaths): Promise<number> {
  const { entries } = await readLedger(paths.ledger);
  return summarizeLedger(entries).gpu.gpuHours;
}

/**
 * The graph's own budget check before a stage runs, whatever the planner said: stages,
 * experiments, GPU-hours (each run may use its whole time budget) and wall time.
 * Returns why the stage may not run, or null.
 */
export function checkStageBudgets(
  topic: Topic,
  plan: StagePlan,
  history: readonly StageRecord[],
  usage: { gpuHours: number; wallTimeMs: number },
): { explanation: string; evidence: Record<string, unknown> } | null {
  const budgets = topic.budgets;
  const used = history.reduce((total, record) => total + record.plan.experiments.length, 0);
  const evidence = {
    stage: plan.stage,
    experimentsUsed: used,
    experimentsPlanned: plan.experiments.length,
    gpuHoursUsed: usage.gpuHours,
    wallTimeUsedMs: usage.wallTimeMs,
    budgets,
  };
  if (plan.stage > budgets.stages) return { explanation: `stage ${plan.stage} would exceed the budget of ${budgets.stages} stage(s)`, evidence };
  if (used + plan.experiments.length > budgets.experiments) {
    return {
      explanation: `stage ${plan.stage} needs ${plan.experiments.length} experiments but only ${Math.max(0, budgets.experiments - used)} of the budget of ${budgets.experiments} remain`,
      evidence,
    };
  }
  const budgetMs = parseDuration(topic.base?.time_budget ?? "") ?? 0;
  if (budgets.gpuHours !== undefined) {
    const estimate = (plan.experiments.length * (topic.base?.gpus ?? 0) * budgetMs) / 3_600_000;
    if (usage.gpuHours + estimate > budgets.gpuHours) {
      return {
        explanation: `stage ${plan.stage} could use ${formatNumber(estimate)} GPU-hours (its time budgets), over the ${formatNumber(Math.max(0, budgets.gpuHours - usage.gpuHours))} left`,
        evidence,
      };
    }
  }
  if (budgets.wallTimeMs !== undefined && usage.wallTimeMs + budgetMs > budgets.wallTimeMs) {
    return {
      explanation: `stage ${plan.stage} could take ${topic.base?.time_budget}, over the wall time left (${formatNumber(Math.max(0, budgets.wallTimeMs - usage.wallTimeMs) / 60_000)} min)`,
      evidence,
    };
  }
  return null;
}

/** `framing.md`: the planner's framing of the topic, for people. */
export function renderFraming(framing: FramedQuestion, title: string): string {
  const lines = [
    `# Framing: ${title}`,
    "",
    `**Question.** ${framing.question}`,
    "",
    `**Metric.** ${framing.metric.name} (${framing.metric.goal})`,
    "",
    "## Variables",
    "",
  ];
  for (const variable of framing.variables) lines.push(`- \`${variable.name}\`: ${variable.values.map(String).join(", ")} — ${variable.why}`);
  lines.push("", "## Controls", "", ...framing.controls.map((control) => `- ${control}`), "", "## What would answer it", "", framing.answeredWhen, "");
  return lines.join("\n");
}
