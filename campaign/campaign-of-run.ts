import { basename, dirname, join, resolve } from "node:path";
import { pathExists } from "../core/path-exists.ts";
import { campaignFileNames } from "./campaign-paths.ts";

/**
 * The campaign a result directory belongs to, found by place: a result directory
 * `<campaign>/results/<blueprint id>` whose `<campaign>` holds `topic.md` belongs to that
 * campaign (campaign/README.md, Layout: it is where the leader puts result directories,
 * and where the local launcher runs them). A worker there books its model calls and GPU-hours in the
 * campaign's ledger and is held to the campaign's LLM budget; nothing has to be passed
 * along, and a worker started again later finds the same campaign.
 *
 * Left out: a result directory away from its campaign (an ssh or queue host) finds none;
 * the launch then passes the run's LLM allowance as flags, and the worker books in
 * `<result dir>/ledger.jsonl`, which the leader imports once the run is fetched.
 */
export interface CampaignOfRun {
  root: string;
  ledgerFile: string;
  topicFile: string;
}

export async function findCampaignOf(resultDir: string): Promise<CampaignOfRun | undefined> {
  const results = dirname(resolve(resultDir));
  if (basename(results) !== campaignFileNames.results) return undefined;
  const root = dirname(results);
  const topicFile = join(root, campaignFileNames.topic);
  if (!(await pathExists(topicFile))) return undefined;
  return { root, ledgerFile: join(root, campaignFileNames.ledger), topicFile };
}
