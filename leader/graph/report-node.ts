import { appendEventOnce } from "../../campaign/index.ts";
import { A3rError } from "../../core/errors.ts";
import { writeCampaignReport } from "../report/campaign-report.ts";
import { rankedSummaries } from "../domain/configurations.ts";
import type { Conclusion } from "../domain/planner.ts";
import type { NodeContext } from "./node-context.ts";
import type { LeaderStateValue } from "./leader-state.ts";

/** The report, written from the files whatever stopped the campaign. Wiring: leader-graph.ts. */

export function reportNode(context: NodeContext) {
  const { paths, planner, topicOf, enter, openRound, memo } = context;
  return async (state: LeaderStateValue): Promise<Partial<LeaderStateValue>> => {
    await enter("report", state);
    const topic = await topicOf();
    let conclusion: Conclusion | undefined;
    if (planner.conclude && state.history.length > 0) {
      const summaries = rankedSummaries(state.history, topic.metric?.goal ?? "maximize");
      try {
        conclusion = await memo("conclude", () =>
          planner.conclude!({ topic, ...(state.framing === null ? {} : { framing: state.framing }), history: state.history, stop: state.stop, summaries }),
        );
      } catch (error) {
        // The report is written from the computed figures anyway; a refused or unusable
        // interpretation is recorded, never a reason to leave the campaign without a report.
        if (!(error instanceof A3rError && ["LLM_BUDGET_EXCEEDED", "PLANNER_OUTPUT_INVALID", "LLM_OUTPUT_INVALID"].includes(error.code))) throw error;
        await appendEventOnce(paths.events, "report.conclusion_skipped", {}, { code: error.code, reason: error.message });
      }
    }
    await writeCampaignReport({
      paths,
      topic,
      history: state.history,
      stop: state.stop,
      ...(state.framing === null ? {} : { framing: state.framing }),
      ...(conclusion ? { conclusion } : {}),
    });
    await appendEventOnce(
      paths.events,
      "campaign.reported",
      { openRound: await openRound() },
      { report: paths.report, html: paths.reportHtml, stages: state.history.length, stop: state.stop },
    );
    return { reportFile: paths.report };
  };
}
