import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendEvent, campaignPaths, createCampaign, ResultDirWriter, type CampaignPaths } from "../../campaign/index.ts";
import { pathExists } from "../../core/path-exists.ts";
import { analyzeStage } from "../analysis/analyze-stage.ts";
import { loadTopic } from "../domain/topic.ts";
import { writeStagePlan } from "../record/stage-plan-file.ts";
import { reportFixturePlans, reportFixtureRuns, reportFixtureTopicText, type FixtureRun } from "../../test-support/report-fixtures.ts";
import { runA3r } from "../../test-support/run-cli.ts";
import { rewriteCampaignReport } from "./campaign-report.ts";
import { writeCampaignWriteup } from "./writeup.ts";

/**
 * `a3r writeup` on a finished campaign folder (the report fixture's two stages, written
 * through ResultDirWriter, with a yes/no question): the document has every section, answers
 * the question in its own terms, and every link in it resolves: to a run's result
 * directory, to the report, or to an anchor of the document. Every number of the results
 * table and of the answer is a link.
 */
async function writeRun(paths: CampaignPaths, run: FixtureRun): Promise<void> {
  const writer = await ResultDirWriter.open(paths.result(run.blueprintId), "writeup-test", { ttlMs: 60_000 });
  await writer.writeStatus({ state: "queued", host: "here" });
  await writer.writeStatus({ state: "preparing" });
  await writer.writeStatus({ state: "running", attempt: 1 });
  for (const record of run.records) await writer.appendMetrics(record);
  if (run.state === "failed") await writer.writeStatus({ state: "failed", reason: run.reason! });
  else {
    await writer.writeStatus({ state: "succeeded" });
    await writer.writeResult(`# ${run.blueprintId}\n\nsucceeded\n`);
  }
  await writer.finish();
  await writer.release();
}

async function finishedCampaign(runsDir: string): Promise<CampaignPaths> {
  const text = reportFixtureTopicText("Does a smaller learning rate help?").replace(
    "Which learning rate gives the best final reward_mean?",
    "Does a smaller learning rate help the final reward_mean?",
  );
  await createCampaign(runsDir, "written", text);
  const paths = campaignPaths(runsDir, "written");
  for (const plan of reportFixturePlans()) await writeStagePlan(paths, plan, "Does a smaller learning rate help?");
  for (const run of reportFixtureRuns()) await writeRun(paths, run);
  const topic = (await loadTopic(paths.topic)).topic;
  const history = [];
  for (const plan of reportFixturePlans()) {
    const { analysis } = await analyzeStage(topic, plan, history, paths);
    history.push({ plan, outcomes: analysis.outcomes });
    await appendEvent(paths.events, "stage.analyzed", { stage: plan.stage });
  }
  await appendEvent(paths.events, "campaign.stop_decided", { stage: 2, reason: "separated", explanation: "lr-0.03 is better than every other" });
  await rewriteCampaignReport(paths, topic);
  return paths;
}

/** [text](href) links of a markdown text, outside code. */
function markdownLinks(markdown: string): { text: string; href: string }[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, "").replace(/`[^`]*`/g, "");
  return [...prose.matchAll(/\[((?:\\.|[^\]])*)\]\(([^)\s]*)\)/g)].map((match) => ({ text: match[1]!, href: match[2]! }));
}

describe("a3r writeup", () => {
  let runsDir: string;
  let paths: CampaignPaths;
  beforeAll(async () => {
    runsDir = await mkdtemp(join(tmpdir(), "a3r-writeup-"));
    paths = await finishedCampaign(runsDir);
  });
  afterAll(async () => {
    await rm(runsDir, { recursive: true, force: true });
  });

  it("writes every section, answers the yes/no question, and every link resolves", async () => {
    const topic = (await loadTopic(paths.topic)).topic;
    const written = await writeCampaignWriteup(paths, topic);
    expect(written.finished).toBe(true);
    const markdown = written.markdown;
    if (process.env.SHOW_WRITEUP) console.log(markdown);
    for (const heading of [
      "Abstract",
      "1. Question",
      "2. Method",
      "3. Results",
      "4. What was decided and what was not",
      "5. Threats to validity",
      "6. How to reproduce each number",
    ])
      expect(markdown).toContain(`## ${heading}`);
    // The fixture's smaller lr (0.01 and 0.03 below the baseline 0.1): lr-0.03 is better beyond noise, so "yes".
    expect(markdown).toMatch(
      /Smaller lr vs the baseline lr=0\.1: does it help\? \*\*yes\*\*: \[lr-0\.03\]\(#cfg-lr-0\.03\) is better than the \[baseline\]\(#cfg-baseline\) by \[0\.29\]\(#cfg-lr-0\.03\)/,
    );
    expect(markdown).toContain("Holm-adjusted");

    const links = markdownLinks(markdown);
    const anchors = new Set([...markdown.matchAll(/<a id="([^"]+)"><\/a>/g)].map((match) => match[1]!));
    expect(anchors).toEqual(new Set(["cfg-baseline", "cfg-lr-0.01", "cfg-lr-1", "cfg-lr-0.03"]));
    expect(links.length).toBeGreaterThan(30);
    for (const link of links) {
      if (link.href.startsWith("#")) expect(anchors.has(link.href.slice(1)), link.href).toBe(true);
      else expect(await pathExists(join(paths.root, link.href.replace(/#.*$/, ""))), link.href).toBe(true);
    }
    // Every run's score links to that run's result directory.
    for (const run of reportFixtureRuns().filter((item) => item.state === "succeeded"))
      expect(links.some((link) => link.href === `results/${run.blueprintId}/result.md`)).toBe(true);

    // Every number of the results table is a link (the counts of seeds aside).
    const table = markdown.split("\n").filter((line) => line.startsWith("| ") && /^\| (\*\*)?(baseline|lr-[\d.]+)/.test(line));
    expect(table.length).toBeGreaterThanOrEqual(4);
    for (const line of table.slice(0, 4)) {
      const cells = line.split(" | ").slice(3); // mean, interval, scores
      for (const text of cells) expect(text.replace(/\[(?:\\.|[^\]])*\]\([^)]*\)/g, "").replace(/[\s|,]/g, ""), line).toMatch(/^(n\/a|none)?$/);
    }
    // One command per run, and the report's figures embedded in the HTML.
    expect(markdown).toContain(
      `a3r worker run ${join(paths.root, "stages", "1", "blueprints", "s1-baseline-seed1.md")} --result-dir ${join(paths.root, "repro", "s1-baseline-seed1")}`,
    );
    expect(markdown).toContain(`a3r report written --runs-dir ${runsDir}`);
    expect(written.html.match(/<figure class="chart"/g)?.length).toBe(3);
    expect(written.html).toContain('<tr id="cfg-lr-0.03">');
    expect(written.html).not.toContain("<script");
  });

  it("with --llm, a scripted model drafts an abstract shown apart, and a number the facts do not hold is flagged", async () => {
    const script = join(runsDir, "draft.yaml");
    await writeFile(
      script,
      [
        "model: scripted",
        "steps:",
        "  - match: { role: analyze }",
        "    parsed:",
        '      abstract: "A smaller learning rate helps: lr-0.03 beats the baseline by 0.29."',
        '      discussion: "With 2 seeds of lr-0.03 the interval is wide; a gain of 0.777 is not shown."',
      ].join("\n"),
    );
    const result = await runA3r(["writeup", "written", "--runs-dir", runsDir, "--llm"], { env: { A3R_LLM_PROVIDER: "scripted", A3R_LLM_SCRIPT: script } });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain("numbers the facts do not hold (flagged in the document): 0.777");
    const markdown = await readFile(join(paths.root, "writeup.md"), "utf8");
    expect(markdown).toContain("## Drafted abstract and discussion (model-written)");
    expect(markdown).toContain("FLAGGED: numbers that occur nowhere in the facts: 0.777.");
    expect(markdown).toContain("lr-0.03 beats the baseline by 0.29.");
    // The template's abstract stays first, the record.
    expect(markdown.indexOf("## Abstract")).toBeLessThan(markdown.indexOf("## Drafted abstract"));
    expect(await readFile(paths.ledger, "utf8")).toMatch(/"role":"analyze"/);
    const none = await runA3r(["writeup", "written", "--runs-dir", runsDir, "--llm"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/error \[LLM_CONFIG_INVALID\]/);
  });

  it("is a command: a3r writeup ID writes both files", async () => {
    const result = await runA3r(["writeup", "written", "--runs-dir", runsDir]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(join(paths.root, "writeup.md"));
    expect(await readFile(join(paths.root, "writeup.html"), "utf8")).toContain("<h2>Abstract</h2>");
  });
});
