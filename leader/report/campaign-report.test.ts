import { describe, expect, it } from "vitest";
import { makeEvent, summarizeLedger } from "../../campaign/index.ts";
import { stopFromEvents } from "./campaign-report.ts";
import { renderReportHtml } from "./html.ts";
import { renderReportMarkdown } from "./markdown.ts";
import { buildReportModel } from "./model.ts";
import { parseTopic } from "../domain/topic.ts";

describe("stopFromEvents", () => {
  it("takes the last stop decision, as the graph's state holds it", () => {
    const events = [
      makeEvent("campaign.stop_decided", { stage: 1, reason: "budget", explanation: "old" }),
      makeEvent("stage.analyzed", { stage: 2 }),
      makeEvent("campaign.stop_decided", { stage: 2, reason: "no-improvement", explanation: "nothing beat baseline" }),
      makeEvent("campaign.reported", { stages: 2 }),
    ];
    expect(stopFromEvents(events)).toEqual({ reason: "no-improvement", explanation: "nothing beat baseline" });
  });

  it("reads a failed blueprint audit as the stop, naming the first finding", () => {
    const events = [
      makeEvent("stage.audit_failed", {
        stage: 3,
        findings: [
          { blueprintId: "s3-a-seed1", line: 7, message: "Command is empty" },
          { blueprintId: "s3-b-seed1", line: 1, message: "x" },
        ],
      }),
    ];
    expect(stopFromEvents(events)).toEqual({ reason: "audit-failed", explanation: "stage 3: 2 blueprint error(s), first: s3-a-seed1:7 Command is empty" });
  });

  it("is null for a campaign that has not stopped", () => {
    expect(stopFromEvents([makeEvent("stage.analyzed", { stage: 1 })])).toBeNull();
  });
});

describe("a report without a metric", () => {
  it("says the question is not answered, and why the campaign stopped", () => {
    const model = buildReportModel({
      campaignId: "plain",
      topic: parseTopic("Is a bigger batch better for our policy?\n"),
      history: [],
      stop: { reason: "needs-input", explanation: "the heuristic planner cannot plan yet: add `metric:`" },
      runs: {},
      ledger: summarizeLedger([]),
      ledgerProblems: 2,
      plannedStages: [],
    });
    const markdown = renderReportMarkdown(model);
    expect(markdown).toContain("The topic names no metric, so no configuration can be scored and the question is not answered.");
    expect(markdown).toContain("- Stopped early (needs-input): the heuristic planner cannot plan yet: add `metric:`.");
    expect(markdown).toContain("- ledger.jsonl has 2 unreadable line(s); the costs below leave them out.");
    expect(markdown).toContain("Language models: no calls recorded in the ledger.");
    const html = renderReportHtml(model);
    expect(html).not.toContain('<section id="charts">');
    expect(html).toContain("<h2>Experiments</h2>");
  });
});
