import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendEvent, campaignPaths, createCampaign, JsonlLedger, ResultDirWriter, type CampaignPaths } from "../../campaign/index.ts";
import { analyzeStage } from "../analysis/analyze-stage.ts";
import { historyFromFiles, writeCampaignReport } from "./campaign-report.ts";
import type { StagePlan } from "../domain/planner.ts";
import { reportFixturePlans, reportFixtureRuns, reportFixtureTopicText, type FixtureRun } from "../../test-support/report-fixtures.ts";
import { writeStagePlan } from "../record/stage-plan-file.ts";
import { loadTopic } from "../domain/topic.ts";

/**
 * The report as a reader gets it: a real campaign folder (stage plans, result directories
 * written through ResultDirWriter, the event log, the ledger), the history rebuilt from
 * those files alone (as `a3r report` does), report.html written, then opened from disk in
 * headless Chromium. The page must draw every chart with the data's points, fetch nothing
 * beyond itself, log no error, run no script, and link only to files that exist.
 */
const title = "Which lr is best? <script>document.title='pwned'</script>";
const plantedKeys = ["sk-ant-api03-PLANTED0123456789abcdefABCDEF", "PlantedAwsSecret0123456789abcdefABCDEFGH"];
/** Never written: its configuration is measured on two seeds, and the report says it is missing. */
const missingRun = "s1-lr-0.01-seed3";
/** Written without result.md: its link falls back to status.json. */
const failedRun = "s2-lr-0.03-seed3";

async function writeRun(paths: CampaignPaths, run: FixtureRun): Promise<void> {
  const writer = await ResultDirWriter.open(paths.result(run.blueprintId), "report-test", { ttlMs: 60_000 });
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

async function buildCampaign(runsDir: string): Promise<CampaignPaths> {
  await createCampaign(runsDir, "report-html", reportFixtureTopicText(title));
  const paths = campaignPaths(runsDir, "report-html");
  const plans = reportFixturePlans();
  for (const plan of plans) await writeStagePlan(paths, plan, title);
  // A third stage was planned but never dispatched: the report must say so, not drop it silently.
  const third: StagePlan = {
    ...plans[1]!,
    stage: 3,
    experiments: plans[1]!.experiments.map((experiment) => ({ ...experiment, blueprintId: experiment.blueprintId.replace(/^s2-/, "s3-") })),
  };
  await writeStagePlan(paths, third, title);
  for (const run of reportFixtureRuns()) if (run.blueprintId !== missingRun) await writeRun(paths, run);

  const topic = (await loadTopic(paths.topic)).topic;
  const history = [];
  for (const plan of plans) {
    const { analysis } = await analyzeStage(topic, plan, history, paths);
    history.push({ plan, outcomes: analysis.outcomes });
    await appendEvent(paths.events, "stage.analyzed", { stage: plan.stage });
  }
  await appendEvent(paths.events, "campaign.stop_decided", {
    stage: 2,
    reason: "no-improvement",
    explanation: "no configuration of stage 2 beats lr-0.03's mean",
  });
  const ledger = new JsonlLedger(paths.ledger);
  await ledger.record({
    kind: "llm",
    role: "plan",
    provider: "scripted",
    model: "m",
    inputTokens: 1200,
    outputTokens: 300,
    cachedTokens: 0,
    costUsd: 0.02,
    durationMs: 800,
    ok: true,
  });
  await ledger.record({
    kind: "llm",
    role: "analyze",
    provider: "scripted",
    model: "m",
    inputTokens: 400,
    outputTokens: 100,
    cachedTokens: 0,
    costUsd: 0.005,
    durationMs: 300,
    ok: true,
  });
  await ledger.record({ kind: "gpu", blueprintId: "s1-baseline-seed1", host: "here", gpus: 1, hours: 0.5 });
  return paths;
}

describe("report.html in a browser", () => {
  let runsDir: string;
  let paths: CampaignPaths;
  let browser: Browser;
  let page: Page;
  const requests: string[] = [];
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    runsDir = await mkdtemp(join(tmpdir(), "a3r-report-html-"));
    paths = await buildCampaign(runsDir);
    const topic = (await loadTopic(paths.topic)).topic;
    const { history, stop } = await historyFromFiles(paths, topic);
    await writeCampaignReport({
      paths,
      topic,
      history,
      stop,
      conclusion: {
        answer: "A learning rate of 0.03 gives the best final reward.",
        claims: [
          { text: "lr 0.03 beats the baseline", experimentIds: ["s2-lr-0.03-seed1", "s2-lr-0.03-seed2", "s1-baseline-seed1"] },
          { text: "lr 3 would be better still", experimentIds: ["s4-lr-3-seed1"] },
        ],
        // Secrets a model (or a pasted log) put into the conclusion never reach the report.
        caveats: ["only two seeds of lr 0.03 finished", `the run used ${plantedKeys[0]} and AWS_SECRET_ACCESS_KEY=${plantedKeys[1]}`],
      },
    });
    browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"],
    });
    page = await browser.newPage();
    page.on("request", (request) => requests.push(request.url()));
    page.on("console", (message) => {
      if (message.type() === "error") consoleErrors.push(message.text());
    });
    page.on("pageerror", (error) => consoleErrors.push(error.message));
    await page.goto(pathToFileURL(paths.reportHtml).href, { waitUntil: "load" });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await rm(runsDir, { recursive: true, force: true });
  });

  it("writes no planted secret into any file of the campaign folder but the topic the user wrote", async () => {
    const { readdir } = await import("node:fs/promises");
    const files = (await readdir(paths.root, { recursive: true, withFileTypes: true }))
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name));
    expect(files).toContain(paths.report);
    for (const file of files) {
      const text = await readFile(file, "utf8").catch(() => "");
      for (const key of plantedKeys) expect(text.includes(key), `${file} holds a planted secret`).toBe(false);
    }
    expect(await readFile(paths.report, "utf8")).toContain("[REDACTED]");
  });

  it("rebuilds the history and the stop from the files alone", async () => {
    const { history, stop } = await historyFromFiles(paths, (await loadTopic(paths.topic)).topic);
    expect(stop).toEqual({ reason: "no-improvement", explanation: "no configuration of stage 2 beats lr-0.03's mean" });
    expect(history.map((record) => record.plan.stage)).toEqual([1, 2]);
    const states = Object.fromEntries(history.flatMap((record) => record.outcomes.map((outcome) => [outcome.blueprintId, outcome.state])));
    expect(states[missingRun]).toBe("missing");
    expect(states[failedRun]).toBe("failed");
    expect(Object.values(states).filter((state) => state === "succeeded")).toHaveLength(10);
  });

  it("loads nothing but the file itself, logs no error and runs no script", async () => {
    expect(requests).toEqual([pathToFileURL(paths.reportHtml).href]);
    expect(consoleErrors).toEqual([]);
    expect(await page.locator("script").count()).toBe(0);
    expect(await page.title()).toBe(`Report: ${title}`);
    expect(await page.locator("h1").textContent()).toBe(`Report: ${title}`);
  });

  it("draws the curves of each stage: one line per configuration with one point per recorded step", async () => {
    const figures = await page.$$eval("figure.chart svg", (svgs) =>
      svgs.map((svg) => svg.getBoundingClientRect()).map((box) => ({ width: box.width, height: box.height })),
    );
    expect(figures).toHaveLength(3);
    for (const box of figures) {
      expect(box.width).toBeGreaterThan(100);
      expect(box.height).toBeGreaterThan(100);
    }
    const curves = await page.$$eval('figure[data-chart="curves"] path.series', (elements) =>
      elements.map((element) => {
        const path = element as SVGPathElement;
        return {
          name: path.dataset.name,
          length: path.getTotalLength(),
          points: (path.getAttribute("d") ?? "").split(/[ML]/).filter((part) => part.trim() !== "").length,
        };
      }),
    );
    // What the files hold: per configuration, the distinct steps its succeeded runs recorded.
    const runs = reportFixtureRuns().filter((run) => run.blueprintId !== missingRun && run.state === "succeeded");
    const expected = reportFixturePlans().flatMap((plan) =>
      plan.configurations.map((configuration) => {
        const own = runs.filter((run) => run.stage === plan.stage && run.configurationId === configuration.id);
        return { name: configuration.id, points: new Set(own.flatMap((run) => run.records.map((record) => record.step))).size, runs: own.length };
      }),
    );
    expect(curves.map(({ name, points }) => ({ name, points }))).toEqual(expected.map(({ name, points }) => ({ name, points })));
    for (const curve of curves) expect(curve.length).toBeGreaterThan(50);
    const captions = await page.$$eval('figure[data-chart="curves"] figcaption', (elements) => elements.map((element) => element.textContent ?? ""));
    expect(captions[0]).toContain(
      `runs per line: ${expected
        .slice(0, 3)
        .map((item) => `${item.name} ${item.runs}`)
        .join(", ")}`,
    );
  });

  it("draws the score of each configuration as a dot with its interval, the best furthest right", async () => {
    const dots = await page.$$eval('figure[data-chart="scores"] circle.estimate', (elements) =>
      elements.map((element) => {
        const box = element.getBoundingClientRect();
        return { label: element.getAttribute("data-label"), x: box.x + box.width / 2, width: box.width };
      }),
    );
    expect(dots.map((dot) => dot.label)).toEqual(["baseline", "lr-0.01", "lr-1", "lr-0.03"]);
    for (const dot of dots) expect(dot.width).toBeGreaterThan(0);
    expect(dots.map((dot) => dot.x).sort((a, b) => a - b)).toEqual(
      ["lr-0.01", "baseline", "lr-1", "lr-0.03"].map((label) => dots.find((dot) => dot.label === label)!.x),
    );
    // Every configuration has at least two scored seeds, so every one has a bar of some width.
    const bars = await page.$$eval('figure[data-chart="scores"] g.interval', (groups) => groups.map((group) => group.getBoundingClientRect().width));
    expect(bars).toHaveLength(4);
    for (const width of bars) expect(width).toBeGreaterThan(0);
  });

  it("links every experiment that has files to a file that exists, and every other link too", async () => {
    const tableLinks = await page.$$eval("table.experiments a", (anchors) =>
      anchors.map((anchor) => ({ text: anchor.textContent, href: (anchor as HTMLAnchorElement).href })),
    );
    expect(tableLinks).toHaveLength(11);
    expect(tableLinks.find((link) => link.text === failedRun)!.href).toMatch(/results\/s2-lr-0\.03-seed3\/status\.json$/);
    expect(tableLinks.some((link) => link.text === missingRun)).toBe(false);
    const allLinks = await page.$$eval("a[href]", (anchors) => anchors.map((anchor) => (anchor as HTMLAnchorElement).href));
    for (const href of allLinks) {
      expect(href.startsWith("file://")).toBe(true);
      expect((await stat(fileURLToPath(href))).isFile()).toBe(true);
    }
  });

  it("shows the computed caveats and the flagged claim, and keeps the charts in print", async () => {
    const caveats = await page.locator("#caveats").textContent();
    expect(caveats).toContain(`${missingRun} (missing: no result directory)`);
    expect(caveats).toContain(`${failedRun} (failed: out of memory: CUDA out of memory <tried to allocate 2 GiB>)`);
    expect(caveats).toContain("Stage(s) 3 were planned");
    const flagged = page.locator("li.claim.flagged");
    expect(await flagged.count()).toBe(1);
    expect(await flagged.isVisible()).toBe(true);
    expect(await flagged.textContent()).toMatch(/not supported by any experiment of this campaign.*s4-lr-3-seed1/i);
    expect(await page.locator("#costs").textContent()).toMatch(/GPU-hours: 0\.5 .*plan.*analyze.*total/s);

    await page.emulateMedia({ media: "print" });
    const printed = await page.$$eval("figure.chart svg", (svgs) => svgs.map((svg) => svg.getBoundingClientRect().width));
    for (const width of printed) expect(width).toBeGreaterThan(100);
    await page.emulateMedia({ media: "screen" });

    const markdown = await readFile(paths.report, "utf8");
    expect(markdown).toContain("The best configuration measured is **lr-0.03**");
    expect(markdown).toContain(`[${failedRun}](results/${failedRun}/status.json)`);
    expect(markdown).not.toContain("<script");
  });
});
