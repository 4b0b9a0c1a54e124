import { mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { writeFileAtomic } from "../core/atomic-file.ts";
import { A3rError } from "../core/errors.ts";
import { assertCampaignId, isCampaignId } from "./campaign-id.ts";
import { campaignFileNames, campaignPaths, campaignPathsAt, type CampaignPaths, type StagePaths } from "./campaign-paths.ts";
import { appendEvent } from "./event-log.ts";

/**
 * Campaign folders under a runs directory: create, list, load. A campaign is a folder
 * with a topic.md; everything else in it appears as the leader works.
 *
 * Left out: the leader's checkpoint database (LangGraph owns leader.sqlite), deletion
 * (a person removes a folder by hand), and locking between two leaders of one campaign
 * (the leader's thread id is the campaign id; run one leader per campaign).
 */
export interface StageListing {
  number: number;
  paths: StagePaths;
  hasPlan: boolean;
  /** Absolute paths of `stages/<n>/blueprints/*.md`, sorted by name. */
  blueprintFiles: string[];
}

export interface Campaign {
  id: string;
  paths: CampaignPaths;
  topic: string;
  stages: StageListing[];
}

export interface CampaignListing {
  id: string;
  root: string;
}

/** Creates `runsDir/<id>/` with topic.md, stages/, results/, an empty ledger and a first event. */
/**
 * `created` adds facts to the `campaign.created` event (the leader's planner choice), so
 * they are on record from the first event on, with no later write a crash could miss.
 */
export async function createCampaign(runsDir: string, id: string, topicText: string, created: Record<string, unknown> = {}): Promise<Campaign> {
  const paths = campaignPaths(runsDir, id);
  await mkdir(runsDir, { recursive: true });
  try {
    // Not recursive: two creators racing for one id cannot both succeed.
    await mkdir(paths.root);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") {
      throw new A3rError("CAMPAIGN_EXISTS", `campaign ${id} already exists in ${runsDir}`, {
        where: paths.root,
        hint: `resume it, or choose another id (e.g. "${id.slice(0, 60)}-2")`,
      });
    }
    throw error;
  }
  await writeFileAtomic(paths.topic, topicText.endsWith("\n") ? topicText : `${topicText}\n`);
  await mkdir(paths.stages);
  await mkdir(paths.results);
  await writeFile(paths.ledger, "", { flag: "a" });
  await appendEvent(paths.events, "campaign.created", { ...created, campaignId: id, topic: paths.topic });
  return loadCampaign(runsDir, id);
}

export async function loadCampaign(runsDir: string, id: string): Promise<Campaign> {
  const paths = campaignPaths(runsDir, id);
  let topic: string;
  try {
    topic = await readFile(paths.topic, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    const known = (await listCampaigns(runsDir)).map((campaign) => campaign.id);
    throw new A3rError("CAMPAIGN_NOT_FOUND", `no campaign ${id} in ${runsDir}`, {
      where: paths.root,
      hint: known.length > 0 ? `known campaigns: ${known.slice(0, 10).join(", ")}` : `create it first; ${runsDir} holds no campaigns`,
    });
  }
  return { id, paths, topic, stages: await listStages(paths) };
}

/** Campaign folders (a valid id with a topic.md), sorted by id; a missing runs dir is empty. */
export async function listCampaigns(runsDir: string): Promise<CampaignListing[]> {
  const names = await readdirOrEmpty(runsDir);
  const listings: CampaignListing[] = [];
  for (const name of names.sort()) {
    if (!isCampaignId(name)) continue;
    if (await isFile(join(runsDir, name, campaignFileNames.topic))) listings.push({ id: name, root: join(runsDir, name) });
  }
  return listings;
}

/** Stage folders whose name is a number, in numeric order, with their blueprint files. */
export async function listStages(paths: CampaignPaths): Promise<StageListing[]> {
  const stages: StageListing[] = [];
  const numbers = (await readdirOrEmpty(paths.stages))
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .sort((a, b) => a - b);
  for (const number of numbers) {
    const stage = paths.stage(number);
    const files = (await readdirOrEmpty(stage.blueprints)).filter((name) => name.endsWith(".md")).sort();
    stages.push({ number, paths: stage, hasPlan: await isFile(stage.plan), blueprintFiles: files.map((name) => join(stage.blueprints, name)) });
  }
  return stages;
}

/** Opens a campaign folder by location (for audits of arbitrary paths); the id is the folder name. */
export function campaignAt(root: string): CampaignPaths {
  return campaignPathsAt(root, basename(root));
}

export { assertCampaignId };

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT" || (error as NodeJS.ErrnoException).code === "ENOTDIR") return [];
    throw error;
  }
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}
