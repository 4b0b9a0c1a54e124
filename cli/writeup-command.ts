import { resolve } from "node:path";
import type { Command } from "commander";
import { loadCampaign } from "../campaign/index.ts";
import { parseTopic, writeCampaignWriteup } from "../leader/index.ts";

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
    .action(async (campaignId: string, flags: { runsDir: string }) => {
      const campaign = await loadCampaign(resolve(flags.runsDir), campaignId);
      const written = await writeCampaignWriteup(campaign.paths, parseTopic(campaign.topic, { file: campaign.paths.topic }));
      if (!written.finished) process.stderr.write(`note: campaign ${campaignId} has not stopped; the write-up covers the stages analyzed so far\n`);
      process.stdout.write(`writeup: ${written.markdownFile}\nwriteup: ${written.htmlFile}\n`);
    });
}
