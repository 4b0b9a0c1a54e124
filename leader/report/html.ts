import { renderIntervalChart } from "../../core/interval-chart.ts";
import { renderLineChart } from "../../core/line-chart.ts";
import { formatNumber } from "../domain/configurations.ts";
import type { CampaignReportModel, Inline, StageCurves } from "./model.ts";
import { intervalText } from "./model.ts";
import { comparisonCaption, comparisonCells, comparisonHeader } from "./comparison-table.ts";

/**
 * `report.html`: one self-contained page (inline CSS and SVG, no script, no external
 * URL; a Content-Security-Policy forbids fetching anything even if a URL slipped in),
 * readable on screen and in print. Every piece of text from files and models is escaped.
 * Links are relative to the campaign folder, so the folder can be moved or archived whole.
 */
export function renderReportHtml(model: CampaignReportModel): string {
  const body: string[] = [
    `<header><h1>Report: ${escapeHtml(model.title)}</h1><p class="meta">Campaign <code>${escapeHtml(model.campaignId)}</code> · markdown version: <a href="report.md">report.md</a></p></header>`,
    section("question", "Question", [`<blockquote class="question">${paragraphsOf(model.question)}</blockquote>`, framingHtml(model)]),
    section("answer", "Answer", [
      ...model.answer.map((paragraph) => `<p>${paragraph.map(inlineRun).join("")}</p>`),
      `<p class="method">${escapeHtml(model.method)}</p>`,
    ]),
    section("caveats", "Caveats", [
      model.caveats.length === 0
        ? "<p>None found in the computed figures.</p>"
        : `<ul>${model.caveats.map((caveat) => `<li>${escapeHtml(caveat)}</li>`).join("")}</ul>`,
    ]),
  ];
  if (model.metric) {
    body.push(section("charts", "Charts", [scoreFigure(model), ...model.curves.map((curves) => curveFigure(model, curves))]));
    body.push(section("configurations", "Score per configuration", [configurationTable(model)]));
    if ((model.comparisons?.rows.length ?? 0) > 0) body.push(section("comparisons", "Against the best", [comparisonTable(model)]));
  }
  if (model.verdicts.length > 0) {
    body.push(
      section("predictions", "Predictions", [
        `<ul>${model.verdicts.map((verdict) => `<li>Stage ${verdict.stage}, <strong>${escapeHtml(verdict.configurationId)}</strong>: <span class="verdict ${verdict.verdict}">${verdict.verdict.toUpperCase()}</span>. Predicted: ${escapeHtml(verdict.prediction)}. Measured: ${escapeHtml(verdict.explanation)}.</li>`).join("")}</ul>`,
      ]),
    );
  }
  body.push(section("experiments", "Experiments", [experimentTable(model)]));
  body.push(section("costs", "Costs", costsHtml(model)));
  if (model.conclusion) body.push(section("conclusion", "Conclusion (model-written)", conclusionHtml(model.conclusion)));
  body.push(
    `<footer><p>Stage analyses: ${model.stages.map((stage) => `<a href="stages/${stage}/analysis.md">stage ${stage}</a>`).join(", ") || "none"}.</p></footer>`,
  );
  return [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>Report: ${escapeHtml(model.title)}</title>`,
    `<style>${css}</style>`,
    "</head>",
    "<body>",
    "<main>",
    ...body,
    "</main>",
    "</body>",
    "</html>",
    "",
  ].join("\n");
}

const css = `
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; margin: 0; background: #fafafa; }
main { max-width: 1000px; margin: 0 auto; padding: 24px; background: white; }
h1 { font-size: 1.6em; margin: 0 0 4px; } h2 { font-size: 1.25em; border-bottom: 1px solid #ddd; padding-bottom: 2px; margin-top: 1.6em; }
.meta { color: #666; margin: 0; }
p.method { color: #555; font-size: 13px; }
blockquote.question { margin: 0; padding: 4px 12px; border-left: 4px solid #ccc; color: #333; }
table { border-collapse: collapse; width: 100%; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } td.number { text-align: right; font-variant-numeric: tabular-nums; }
tr.best td { font-weight: bold; }
.state-failed, .state-timed_out, .state-cancelled, .state-missing { color: #b00020; }
.verdict.supported { color: #1b7f3b; font-weight: bold; } .verdict.refuted { color: #b00020; font-weight: bold; } .verdict.inconclusive { color: #8a6d00; font-weight: bold; }
figure.chart { margin: 12px 0; } figure.chart svg { max-width: 100%; height: auto; display: block; }
figcaption { color: #555; font-size: 13px; }
li.claim.flagged { color: #b00020; } .flag { font-weight: bold; text-transform: uppercase; }
code { font-size: 0.95em; }
@media print {
  body { background: white; font-size: 11pt; } main { max-width: none; padding: 0; }
  figure.chart, table, tr { break-inside: avoid; } h2 { break-after: avoid; }
  a { color: inherit; text-decoration: none; }
}
`.trim();

function section(id: string, title: string, content: string[]): string {
  return `<section id="${id}"><h2>${escapeHtml(title)}</h2>\n${content.filter((part) => part !== "").join("\n")}\n</section>`;
}

function framingHtml(model: CampaignReportModel): string {
  const framing = model.framing;
  if (!framing) return "";
  const items = [
    ...framing.variables.map(
      (variable) =>
        `<li>variable <strong>${escapeHtml(variable.name)}</strong>: ${variable.values.map((value) => escapeHtml(String(value))).join(", ")} (${escapeHtml(variable.why)})</li>`,
    ),
    ...framing.controls.map((control) => `<li>control: ${escapeHtml(control)}</li>`),
    `<li>answered when: ${escapeHtml(framing.answeredWhen)}</li>`,
  ];
  return `<p>Framed as: ${escapeHtml(framing.question)}</p><ul>${items.join("")}</ul>`;
}

export function scoreFigure(model: CampaignReportModel): string {
  const metric = model.metric!;
  const svg = renderIntervalChart(
    model.configurations.map((row) => ({ label: row.id, value: row.mean, low: row.low, high: row.high, highlight: row.isBest, note: `n=${row.n}` })),
    {
      title: `${metric.label} per configuration`,
      valueLabel: `${metric.label} (${metric.goal === "maximize" ? "higher" : "lower"} is better)`,
      ...(metric.reference === undefined ? {} : { reference: { value: metric.reference, label: `reference ${formatNumber(metric.reference)}` } }),
    },
  );
  return `<figure class="chart" data-chart="scores">${svg}<figcaption>Mean score of each configuration (dot) with its 95% interval across seeds (bar); no bar with fewer than two scored seeds; the best configuration in red.</figcaption></figure>`;
}

export function curveFigure(model: CampaignReportModel, curves: StageCurves): string {
  const metric = model.metric!;
  const height = Math.max(360, 36 + 14 * curves.series.length + 60);
  const svg = renderLineChart(curves.series, { title: `Stage ${curves.stage}: ${metric.name}`, xLabel: "step", yLabel: metric.name, height });
  const averaged = curves.runs.some((count) => count > 1);
  const counts = curves.series.map((series, index) => `${series.name} ${curves.runs[index]}`).join(", ");
  const caption = averaged
    ? `Stage ${curves.stage}: ${metric.name} per training step, one line per configuration: at each step, the mean over its succeeded runs that recorded that step (runs per line: ${counts}).`
    : `Stage ${curves.stage}: ${metric.name} per training step, one line per configuration (one succeeded run each).`;
  return `<figure class="chart" data-chart="curves" data-stage="${curves.stage}">${svg}<figcaption>${escapeHtml(caption)}</figcaption></figure>`;
}

function configurationTable(model: CampaignReportModel): string {
  const rows = model.configurations.map(
    (row) =>
      `<tr${row.isBest ? ' class="best"' : ""}><td>${escapeHtml(row.id)}${row.isBest ? " (best)" : ""}</td><td>${escapeHtml(row.settings)}</td><td class="number">${row.stage}</td><td class="number">${row.n}</td><td class="number">${row.failed}</td><td class="number">${formatNumber(row.mean)}</td><td>${intervalText(row.low, row.high)}</td><td>${row.scores.map(formatNumber).join(", ")}</td></tr>`,
  );
  return `<p>${escapeHtml(model.metric!.label)}, goal: ${model.metric!.goal}; mean over seeds with its 95% interval (t distribution).</p><table><thead><tr><th>configuration</th><th>settings</th><th>stage</th><th>seeds scored</th><th>failed</th><th>mean</th><th>95% interval</th><th>scores</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function comparisonTable(model: CampaignReportModel): string {
  const head = comparisonHeader.map((name) => `<th>${escapeHtml(name)}</th>`).join("");
  const rows = comparisonCells(model).map((cells) => `<tr>${cells.map((text) => `<td>${escapeHtml(text)}</td>`).join("")}</tr>`);
  return `<p>${escapeHtml(comparisonCaption(model, model.metric!.equivalence))}</p><table><thead><tr>${head}</tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function experimentTable(model: CampaignReportModel): string {
  const rows = model.experiments.map((row) => {
    const name = row.link ? `<a href="${escapeHtml(row.link)}">${escapeHtml(row.blueprintId)}</a>` : escapeHtml(row.blueprintId);
    const best = row.best === undefined ? "n/a" : `${formatNumber(row.best)} (${row.bestStep})`;
    return `<tr><td class="number">${row.stage}</td><td>${name}</td><td>${escapeHtml(row.configurationId)}</td><td class="number">${row.seed}</td><td class="state-${escapeHtml(row.state)}">${escapeHtml(row.state)}</td><td class="number">${formatNumber(row.final)}</td><td class="number">${best}</td><td class="number">${formatNumber(row.area)}</td><td class="number">${formatNumber(row.score)}</td><td class="number">${row.gpuHours === undefined ? "n/a" : formatNumber(row.gpuHours)}</td><td>${escapeHtml(row.reason ?? "")}</td></tr>`;
  });
  return `<table class="experiments"><thead><tr><th>stage</th><th>experiment</th><th>configuration</th><th>seed</th><th>state</th><th>final</th><th>best (step)</th><th>area</th><th>score</th><th>GPU-hours</th><th>reason</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function costsHtml(model: CampaignReportModel): string[] {
  const costs = model.costs;
  const hosts = costs.byHost.length > 0 ? `; by host: ${costs.byHost.map((item) => `${escapeHtml(item.host)} ${formatNumber(item.gpuHours)}`).join(", ")}` : "";
  const parts = [`<p>GPU-hours: ${formatNumber(costs.gpuHours)} (${costs.gpuEntries} ledger entr${costs.gpuEntries === 1 ? "y" : "ies"})${hosts}.</p>`];
  if (costs.llmByRole.length === 0) parts.push("<p>Language models: no calls recorded in the ledger.</p>");
  else {
    const rows = [...costs.llmByRole, costs.llmTotal].map(
      (row) =>
        `<tr${row.role === "total" ? ' class="best"' : ""}><td>${escapeHtml(row.role)}</td><td class="number">${row.calls}</td><td class="number">${row.failedCalls}</td><td class="number">${row.inputTokens}</td><td class="number">${row.outputTokens}</td><td class="number">${row.cachedTokens}</td><td class="number">${row.costUsd.toFixed(4)}</td><td class="number">${(row.durationMs / 1000).toFixed(1)}</td></tr>`,
    );
    parts.push(
      `<table class="costs"><thead><tr><th>role</th><th>calls</th><th>failed</th><th>input tokens</th><th>output tokens</th><th>cached tokens</th><th>cost (USD)</th><th>time (s)</th></tr></thead><tbody>${rows.join("")}</tbody></table>`,
    );
  }
  return parts;
}

function conclusionHtml(conclusion: NonNullable<CampaignReportModel["conclusion"]>): string[] {
  const claims = conclusion.claims.map((claim) =>
    claim.status === "grounded"
      ? `<li class="claim grounded">${escapeHtml(claim.text)} <span class="cites">(experiments: ${claim.experimentIds.map((id) => `<code>${escapeHtml(id)}</code>`).join(", ")})</span></li>`
      : `<li class="claim flagged"><span class="flag">Flagged: not supported by any experiment of this campaign</span> (${escapeHtml(claim.problem ?? "")}): ${escapeHtml(claim.text)}</li>`,
  );
  return [
    "<p><em>Interpretation by the planner's language model; the numbers above are computed and take precedence.</em></p>",
    `<p>${escapeHtml(conclusion.answer)}</p>`,
    claims.length > 0 ? `<ul class="claims">${claims.join("")}</ul>` : "",
    conclusion.caveats.length > 0
      ? `<p>Caveats the model adds:</p><ul>${conclusion.caveats.map((caveat) => `<li>${escapeHtml(caveat)}</li>`).join("")}</ul>`
      : "",
  ];
}

function inlineRun(run: Inline): string {
  return typeof run === "string" ? escapeHtml(run) : `<strong>${escapeHtml(run.strong)}</strong>`;
}

function paragraphsOf(text: string): string {
  return text
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.trim())
    .filter((paragraph) => paragraph !== "")
    .map((paragraph) => `<p>${escapeHtml(paragraph)}</p>`)
    .join("");
}

/** Text and attribute values: the five characters that can end or open markup. */
export function escapeHtml(text: string): string {
  return text.replace(/[<>&"']/g, (character) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;", "'": "&#39;" })[character]!);
}
