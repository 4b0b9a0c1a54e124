import { formatNumber } from "../domain/configurations.ts";
import type { CampaignReportModel, Inline } from "./model.ts";
import { intervalText } from "./model.ts";
import { comparisonCaption, comparisonCells, comparisonHeader } from "./comparison-table.ts";
import { stoppedEarlyLines } from "./early-stop-section.ts";

/**
 * `report.md`: the campaign report as markdown, the same sections as report.html with
 * tables in place of charts (which are linked in report.html). Text from files and models
 * is made inert: no raw HTML, no line breaks or pipes that would break a table.
 */
export function renderReportMarkdown(model: CampaignReportModel): string {
  const lines: string[] = [`# Report: ${inline(model.title)}`, "", `Campaign \`${model.campaignId}\`. Charts: [report.html](report.html).`, ""];

  lines.push("## Question", "", ...model.question.split("\n").map((line) => `> ${escapeMarkdown(line)}`.trimEnd()), "");
  if (model.framing) {
    const framing = model.framing;
    lines.push(`Framed as: ${inline(framing.question)}`, "");
    for (const variable of framing.variables)
      lines.push(`- variable **${inline(variable.name)}**: ${variable.values.map(String).map(inline).join(", ")} (${inline(variable.why)})`);
    for (const control of framing.controls) lines.push(`- control: ${inline(control)}`);
    lines.push(`- answered when: ${inline(framing.answeredWhen)}`, "");
  }

  lines.push("## Answer", "", ...model.answer.flatMap((paragraph) => [paragraph.map(inlineRun).join(""), ""]));
  lines.push(inline(model.method), "");

  lines.push("## Caveats", "");
  if (model.caveats.length === 0) lines.push("None found in the computed figures.");
  else lines.push(...model.caveats.map((caveat) => `- ${inline(caveat)}`));
  lines.push("");

  if (model.metric) {
    lines.push(
      "## Score per configuration",
      "",
      `${inline(model.metric.label)}, goal: ${model.metric.goal}; mean over seeds with its 95% interval (t distribution, clipped to the metric's range when the topic declares one).`,
      "",
      "| configuration | settings | stage | seeds scored | failed | mean | 95% interval | scores |",
      "| --- | --- | --- | --- | --- | --- | --- | --- |",
      ...model.configurations.map(
        (row) =>
          `| ${row.isBest ? `**${cell(row.id)}** (best)` : cell(row.id)} | ${cell(row.settings)} | ${row.stage} | ${row.n} | ${row.failed} | ${formatNumber(row.mean)} | ${intervalText(row.low, row.high)} | ${row.scores.map(formatNumber).join(", ")} |`,
      ),
      "",
    );
  }

  if (model.metric && (model.comparisons?.rows.length ?? 0) > 0) {
    lines.push(
      "## Against the best",
      "",
      inline(comparisonCaption(model, model.metric.equivalence)),
      "",
      `| ${comparisonHeader.join(" | ")} |`,
      `| ${comparisonHeader.map(() => "---").join(" | ")} |`,
      ...comparisonCells(model).map((cells) => `| ${cells.map(cell).join(" | ")} |`),
      "",
    );
  }

  if (model.verdicts.length > 0) {
    lines.push(
      "## Predictions",
      "",
      ...model.verdicts.map(
        (verdict) =>
          `- stage ${verdict.stage}, **${inline(verdict.configurationId)}**: ${verdict.verdict.toUpperCase()}. Predicted: ${inline(verdict.prediction)}. Measured: ${inline(verdict.explanation)}.`,
      ),
      "",
    );
  }

  lines.push(
    "## Experiments",
    "",
    "| stage | experiment | configuration | seed | state | final | best (step) | area | score | GPU-hours | reason |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...model.experiments.map((row) => {
      const name = row.link ? `[${cell(row.blueprintId)}](${row.link})` : cell(row.blueprintId);
      const best = row.best === undefined ? "n/a" : `${formatNumber(row.best)} (${row.bestStep})`;
      return `| ${row.stage} | ${name} | ${cell(row.configurationId)} | ${row.seed} | ${cell(row.state)} | ${formatNumber(row.final)} | ${best} | ${formatNumber(row.area)} | ${formatNumber(row.score)} | ${row.gpuHours === undefined ? "n/a" : formatNumber(row.gpuHours)} | ${cell(row.reason ?? "")} |`;
    }),
    "",
  );
  lines.push(...stoppedEarlyLines(model.experiments, inline));

  lines.push(
    "## Costs",
    "",
    `GPU-hours: ${formatNumber(model.costs.gpuHours)} (${model.costs.gpuEntries} ledger entr${model.costs.gpuEntries === 1 ? "y" : "ies"})${model.costs.byHost.length > 0 ? `; by host: ${model.costs.byHost.map((item) => `${inline(item.host)} ${formatNumber(item.gpuHours)}`).join(", ")}` : ""}.`,
    "",
  );
  if (model.costs.llmByRole.length === 0) lines.push("Language models: no calls recorded in the ledger.", "");
  else {
    lines.push(
      "| role | calls | failed | input tokens | output tokens | cached tokens | cost (USD) | time (s) |",
      "| --- | --- | --- | --- | --- | --- | --- | --- |",
    );
    for (const row of [...model.costs.llmByRole, model.costs.llmTotal]) {
      lines.push(
        `| ${row.role === "total" ? "**total**" : cell(row.role)} | ${row.calls} | ${row.failedCalls} | ${row.inputTokens} | ${row.outputTokens} | ${row.cachedTokens} | ${row.costUsd.toFixed(4)} | ${(row.durationMs / 1000).toFixed(1)} |`,
      );
    }
    lines.push("");
  }

  if (model.conclusion) {
    const conclusion = model.conclusion;
    lines.push(
      "## Conclusion (model-written)",
      "",
      "Interpretation by the planner's language model; the numbers above are computed and take precedence.",
      "",
      inline(conclusion.answer),
      "",
    );
    for (const claim of conclusion.claims) {
      lines.push(
        claim.status === "grounded"
          ? `- ${inline(claim.text)} (experiments: ${claim.experimentIds.map((id) => `\`${cell(id)}\``).join(", ")})`
          : `- **FLAGGED: not supported by any experiment of this campaign** (${inline(claim.problem ?? "")}): ${inline(claim.text)}`,
      );
    }
    if (conclusion.caveats.length > 0) lines.push("", "Caveats the model adds:", "", ...conclusion.caveats.map((caveat) => `- ${inline(caveat)}`));
    lines.push("");
  }

  lines.push(`Stage analyses: ${model.stages.map((stage) => `[stage ${stage}](stages/${stage}/analysis.md)`).join(", ") || "none"}.`, "");
  return lines.join("\n");
}

function inlineRun(run: Inline): string {
  return typeof run === "string" ? inline(run) : `**${inline(run.strong)}**`;
}

/** Untrusted text inside a line: no raw HTML, no line breaks. */
function inline(text: string): string {
  return escapeMarkdown(text.replace(/\s*\r?\n\s*/g, " "));
}

/** Untrusted text inside a table cell: also no pipes. */
function cell(text: string): string {
  return inline(text).replaceAll("|", "\\|");
}

function escapeMarkdown(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}
