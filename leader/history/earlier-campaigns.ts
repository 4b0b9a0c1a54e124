import { dirname } from "node:path";
import type { CampaignPaths } from "../../campaign/index.ts";
import { readIdentityRecords } from "./identity-records.ts";
import { buildResultsIndex } from "./results-index.ts";

/** A campaign that ran the same base before this one, as the report cites it. */
export interface EarlierCampaign {
  id: string;
  title: string | null;
  stop: { reason: string; explanation: string } | null;
  /** How many of this campaign's runs were taken from it (run.reused). */
  reusedRuns: number;
}

/**
 * The campaigns under the same runs folder that ran this campaign's base before it: a
 * run of theirs has this campaign's code commit, config bytes, command and interpreter
 * (any seed or overrides). Their stop decisions are what was known before this one began,
 * and the report cites them, so a second campaign on a base does not read as the first.
 */
export async function earlierCampaignsOnBase(paths: CampaignPaths): Promise<EarlierCampaign[]> {
  const own = await readIdentityRecords(paths.root);
  if (own.length === 0) return [];
  const baseOf = (parts: (typeof own)[number]["parts"]) =>
    JSON.stringify([parts.mode, parts.codeRevision, parts.configSha256, parts.command, parts.interpreter]);
  const bases = new Set(own.map((record) => baseOf(record.parts)));
  const index = await buildResultsIndex(dirname(paths.root));
  const created = index.campaigns.find((campaign) => campaign.id === paths.id)?.createdAt ?? null;
  const earlier: EarlierCampaign[] = [];
  for (const campaign of index.campaigns) {
    if (campaign.id === paths.id || (created !== null && (campaign.createdAt ?? "") >= created)) continue;
    const runs = index.runs.filter((run) => run.campaign === campaign.id);
    if (!runs.some((run) => bases.has(baseOf(run.parts)))) continue;
    const reusedRuns = own.filter((record) => record.reusedFrom?.startsWith(`${campaign.root}/`)).length;
    earlier.push({ id: campaign.id, title: campaign.title, stop: campaign.stop, reusedRuns });
  }
  return earlier;
}
