import { bestConfiguration, formatNumber, summarizeConfigurations } from "./configurations.ts";
import { scoreLabel } from "./heuristic-planner.ts";
import type { StageRecord } from "./planner.ts";
import type { Topic } from "./topic.ts";

/**
 * The campaign's `report.md` as far as this step of the leader goes: the question, why the
 * campaign stopped, the best configuration with its numbers, and every configuration of
 * every stage. The full report (HTML with SVG charts, caveats) is a later step; this one
 * already states nothing that was not computed in code.
 */
export function renderMinimalReport(topic: Topic, history: StageRecord[], stop: { reason: string; explanation: string } | null): string {
  const metric = topic.metric;
  const summaries = summarizeConfigurations(history);
  const best = metric ? bestConfiguration(summaries, metric.goal) : undefined;
  const lines = [`# Report: ${topic.title}`, "", "## Question", "", topic.question, "", "## Answer", ""];
  if (best && metric) {
    const interval = best.sample.low === undefined ? "no interval (one seed)" : `95% interval [${formatNumber(best.sample.low)}, ${formatNumber(best.sample.high)}]`;
    lines.push(`The best configuration measured is **${best.configuration.id}** (${Object.entries(best.configuration.settings).map(([name, value]) => `${name}=${String(value)}`).join(", ")}): ${scoreLabel(metric)} mean ${formatNumber(best.sample.mean)} over ${best.sample.n} seed(s), ${interval}.`);
  } else {
    lines.push("No configuration produced a score, so the question is not answered.");
  }
  lines.push("", `Stopped: ${stop ? `${stop.reason}: ${stop.explanation}` : "(not stopped)"}.`, "", "## Configurations", "");
  if (metric) {
    lines.push("| stage | configuration | seeds scored | failed | mean | 95% interval |", "| --- | --- | --- | --- | --- | --- |");
    for (const summary of summaries) {
      const interval = summary.sample.low === undefined ? "n/a" : `[${formatNumber(summary.sample.low)}, ${formatNumber(summary.sample.high)}]`;
      lines.push(`| ${summary.stage} | ${summary.configuration.id} | ${summary.sample.n} | ${summary.failed} | ${summary.sample.n > 0 ? formatNumber(summary.sample.mean) : "n/a"} | ${interval} |`);
    }
  }
  lines.push("", `Stage analyses: ${history.map((record) => `[stage ${record.plan.stage}](stages/${record.plan.stage}/analysis.md)`).join(", ") || "none"}.`, "");
  return lines.join("\n");
}
