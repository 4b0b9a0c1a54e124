import type { Command } from "commander";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { readBlueprintFile } from "../blueprints/index.ts";
import { buildResultsIndex, type IndexedRun } from "../leader/index.ts";
import { A3rError } from "../core/errors.ts";

interface HistoryFlags {
  runsDir: string;
  base?: string;
  json?: boolean;
}

/**
 * `a3r history`: what the campaigns under a runs folder already know: each campaign's
 * question and stop decision, and each finished run by identity (code commit, config,
 * command, seed, overrides) with the metrics it ended on. A later campaign with the same
 * base takes those runs instead of training them again (campaign/history/).
 */
export function registerHistoryCommand(program: Command): void {
  program
    .command("history")
    .description("list what earlier campaigns found: their stop decisions and every finished run by identity (reused by later campaigns)")
    .option("--runs-dir <dir>", "the runs folder", "runs")
    .option("--base <file>", "only runs of this base: a config file, or a blueprint (its config, else its command)")
    .option("--json", "print { campaigns, runs } as JSON")
    .action(async (flags: HistoryFlags) => {
      const index = await buildResultsIndex(resolve(flags.runsDir));
      const keep = flags.base === undefined ? () => true : await baseFilter(flags.base);
      const runs = index.runs.filter(keep);
      const campaignIds = new Set(runs.map((run) => run.campaign));
      const campaigns = flags.base === undefined ? index.campaigns : index.campaigns.filter((campaign) => campaignIds.has(campaign.id));
      if (flags.json) {
        process.stdout.write(`${JSON.stringify({ campaigns, runs }, null, 2)}\n`);
        return;
      }
      if (campaigns.length === 0) {
        process.stdout.write(`no campaign under ${flags.runsDir}${flags.base === undefined ? "" : ` ran the base ${flags.base}`}\n`);
        return;
      }
      for (const campaign of campaigns) {
        const stop = campaign.stop ? `${campaign.stop.reason}: ${campaign.stop.explanation.slice(0, 240)}` : "not finished";
        process.stdout.write(
          `${campaign.id}  ${campaign.createdAt?.slice(0, 10) ?? "?"}  ${campaign.runs} run(s)\n  ${campaign.title ?? "(untitled)"}\n  ${stop}\n`,
        );
      }
      process.stdout.write(`\n${runs.length} identified run(s):\n`);
      for (const run of runs) process.stdout.write(`${describeRun(run)}\n`);
    });
}

function describeRun(run: IndexedRun): string {
  const overrides = Object.entries(run.parts.overrides)
    .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
    .join(" ");
  const metrics =
    run.lastMetrics === null
      ? ""
      : ` ${Object.entries(run.lastMetrics)
          .slice(0, 3)
          .map(([name, value]) => `${name}=${value}`)
          .join(" ")}`;
  return `  ${run.key.slice(0, 12)}  ${run.campaign}/${run.blueprintId}  ${run.state}${run.step === null ? "" : ` step ${run.step}`}${metrics}  [${overrides}] code ${run.parts.codeRevision.slice(0, 10)}`;
}

async function baseFilter(file: string): Promise<(run: IndexedRun) => boolean> {
  const path = resolve(file);
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    throw new A3rError("FILE_NOT_FOUND", `cannot read ${file}: ${(error as Error).message}`, {
      where: "--base",
      hint: "give a config file or a blueprint (.md)",
    });
  }
  if (!path.endsWith(".md")) {
    const sha = createHash("sha256").update(bytes).digest("hex");
    return (run) => run.parts.configSha256 === sha;
  }
  const blueprint = await readBlueprintFile(path);
  if (blueprint.config !== null) return baseFilter(blueprint.config);
  const command = blueprint.command.trim();
  return (run) => run.parts.command === command;
}
