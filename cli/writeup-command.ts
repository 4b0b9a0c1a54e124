import { campaignTopic } from "./research/campaign-topic.ts";
import { resolve } from "node:path";
import type { Command } from "commander";
import { loadCampaign } from "../campaign/index.ts";
import { openLeaderModel, writeCampaignWriteup } from "../leader/index.ts";

/**
 * `a3r writeup ID`: the campaign as a paper-style document, writeup.md and writeup.html in
 * its folder (leader/report/writeup.ts), from its files alone: no model call, nothing
 * launched. A campaign that has not stopped still gets one, which says so.
 */
export function registerWriteupCommand(program: Command): void {
  program
    .command("writeup")
    .description(
      "write a campaign up as a paper-style document (writeup.md, writeup.html: abstract, question, method, results, decided or not, threats, how to reproduce)",
    )
    .argument("<campaign>", "campaign id")
    .option("--runs-dir <dir>", "data folder holding the campaigns", "runs")
    .option("--llm", "also let the configured language model draft an abstract and a discussion from the facts (shown apart, its numbers checked)")
    .action(async (campaignId: string, flags: { runsDir: string; llm?: boolean }) => {
      const campaign = await loadCampaign(resolve(flags.runsDir), campaignId);
      const topic = await campaignTopic(campaign);
      // The draft is booked to the campaign's ledger and held to its model budget, like the leader's calls.
      const model = flags.llm
        ? await openLeaderModel(process.env, { ledgerFile: campaign.paths.ledger, budget: { tokens: topic.budgets.llmTokens, usd: topic.budgets.llmUsd } })
        : undefined;
      const written = await writeCampaignWriteup(campaign.paths, topic, model ? { model } : {});
      if (written.draft && written.draft.ungrounded.length > 0)
        process.stderr.write(`note: the model's draft has numbers the facts do not hold (flagged in the document): ${written.draft.ungrounded.join(", ")}\n`);
      if (!written.finished) process.stderr.write(`note: campaign ${campaignId} has not stopped; the write-up covers the stages analyzed so far\n`);
      process.stdout.write(`writeup: ${written.markdownFile}\nwriteup: ${written.htmlFile}\n`);
    });
}
