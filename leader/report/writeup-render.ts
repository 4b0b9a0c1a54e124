import { curveFigure, escapeHtml, scoreFigure } from "./html.ts";
import type { CampaignReportModel } from "./model.ts";
import type { WriteupBlock, WriteupDocument, WriteupRun } from "./writeup-types.ts";

/**
 * writeup.md and writeup.html from one WriteupDocument (writeup-model.ts). The HTML embeds
 * the report's own charts (the same SVG, one colour per configuration); the markdown links
 * to them in report.html. Text from files is made inert in both: no raw HTML in markdown
 * beyond the anchors this module writes, everything escaped in HTML, and a
 * Content-Security-Policy that fetches nothing.
 */
export function renderWriteupMarkdown(document: WriteupDocument): string {
  const lines = [
    `# ${inline(document.title)}`,
    "",
    `A write-up of campaign \`${document.campaignId}\`, from its computed report ([report.md](report.md), charts in [report.html](report.html)).`,
    "",
  ];
  for (const section of document.sections) {
    lines.push(`## ${inline(section.title)}`, "");
    for (const block of section.blocks) lines.push(...markdownBlock(block), "");
  }
  return lines.join("\n");
}

function markdownBlock(block: WriteupBlock): string[] {
  switch (block.kind) {
    case "paragraph":
      return [block.runs.map(markdownRun).join("")];
    case "list":
      return block.items.map((item) => `- ${item.map(markdownRun).join("")}`);
    case "table":
      return [
        `| ${block.header.map(cell).join(" | ")} |`,
        `| ${block.header.map(() => "---").join(" | ")} |`,
        ...block.rows.map((row, index) => {
          const anchor = block.anchors?.[index];
          const cells = row.map((runs) => runs.map(markdownRun).join("").replaceAll("|", "\\|"));
          if (anchor) cells[0] = `<a id="${anchor}"></a>${cells[0]}`;
          return `| ${cells.join(" | ")} |`;
        }),
      ];
    case "figures":
      return [
        "Figures: the score of each configuration with its interval, and each stage's curves, are drawn in [report.html](report.html#charts) (and embedded in writeup.html).",
      ];
    case "code":
      return ["```sh", ...block.lines, "```"];
  }
}

function markdownRun(run: WriteupRun): string {
  if (typeof run === "string") return inline(run);
  if ("strong" in run) return `**${inline(run.strong)}**`;
  if ("code" in run) return `\`${run.code.replaceAll("`", "'")}\``;
  return `[${inline(run.text).replaceAll("[", "\\[").replaceAll("]", "\\]")}](${run.href})`;
}

function inline(text: string): string {
  return text
    .replace(/\s*\r?\n\s*/g, " ")
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;");
}

function cell(text: string): string {
  return inline(text).replaceAll("|", "\\|");
}

export function renderWriteupHtml(document: WriteupDocument, model: CampaignReportModel): string {
  const sections = document.sections.map(
    (section) =>
      `<section id="${escapeHtml(section.id)}"><h2>${escapeHtml(section.title)}</h2>\n${section.blocks.map((block) => htmlBlock(block, model)).join("\n")}\n</section>`,
  );
  return [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(document.title)}</title>`,
    `<style>${css}</style>`,
    "</head>",
    "<body>",
    "<main>",
    `<header><h1>${escapeHtml(document.title)}</h1><p class="meta">A write-up of campaign <code>${escapeHtml(document.campaignId)}</code>, from its computed report (<a href="report.html">report.html</a>, <a href="writeup.md">markdown</a>).</p></header>`,
    ...sections,
    "</main>",
    "</body>",
    "</html>",
    "",
  ].join("\n");
}

const css = `
body { font: 16px/1.55 Georgia, "Times New Roman", serif; color: #222; margin: 0; background: #fff; }
main { max-width: 900px; margin: 0 auto; padding: 24px; }
h1 { font-size: 26px; } h2 { font-size: 20px; margin-top: 32px; }
.meta { color: #666; font-family: system-ui, sans-serif; font-size: 14px; }
#abstract p { font-style: italic; }
table { border-collapse: collapse; margin: 12px 0; font: 13px/1.4 system-ui, sans-serif; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
figure { margin: 16px 0; } figcaption { color: #555; font-size: 13px; font-family: system-ui, sans-serif; }
a { color: #1f4e9c; }
`.trim();

function htmlBlock(block: WriteupBlock, model: CampaignReportModel): string {
  switch (block.kind) {
    case "paragraph":
      return `<p>${block.runs.map(htmlRun).join("")}</p>`;
    case "list":
      return `<ul>${block.items.map((item) => `<li>${item.map(htmlRun).join("")}</li>`).join("")}</ul>`;
    case "table": {
      const head = block.header.map((name) => `<th>${escapeHtml(name)}</th>`).join("");
      const rows = block.rows.map((row, index) => {
        const anchor = block.anchors?.[index];
        return `<tr${anchor ? ` id="${escapeHtml(anchor)}"` : ""}>${row.map((runs) => `<td>${runs.map(htmlRun).join("")}</td>`).join("")}</tr>`;
      });
      return `<table><thead><tr>${head}</tr></thead><tbody>${rows.join("")}</tbody></table>`;
    }
    case "figures":
      return model.metric ? [scoreFigure(model), ...model.curves.map((curves) => curveFigure(model, curves))].join("\n") : "";
    case "code":
      return `<pre><code>${escapeHtml(block.lines.join("\n"))}</code></pre>`;
  }
}

function htmlRun(run: WriteupRun): string {
  if (typeof run === "string") return escapeHtml(run);
  if ("strong" in run) return `<strong>${escapeHtml(run.strong)}</strong>`;
  if ("code" in run) return `<code>${escapeHtml(run.code)}</code>`;
  return `<a href="${escapeHtml(run.href)}">${escapeHtml(run.text)}</a>`;
}
