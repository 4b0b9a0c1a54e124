import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { readEvents } from "../../campaign/index.ts";
import { readResultDir } from "../../campaign/index.ts";
import { campaignFileNames } from "../../campaign/index.ts";
import { readIdentityRecords, type IdentityRecord } from "./identity-records.ts";

/**
 * Memory across campaigns: every finished run under a runs folder, keyed by its identity
 * (run-identity.ts), and every campaign's stop decision. Built by reading the folders each
 * time it is asked (a runs folder holds tens of campaigns, not millions of runs), so it is
 * never out of date and has no file of its own to corrupt. Cost: one pass over each
 * campaign's events and identity records, and one read of each identified run's status.
 */
export interface IndexedRun {
  key: string;
  campaign: string;
  blueprintId: string;
  resultDir: string;
  state: string;
  parts: IdentityRecord["parts"];
  /** The run's metrics at its last step (the worker's status), for listings. */
  lastMetrics: Record<string, number> | null;
  step: number | null;
}

export interface IndexedCampaign {
  id: string;
  root: string;
  title: string | null;
  createdAt: string | null;
  /** The stop decision (reason and explanation), or null while it runs. */
  stop: { reason: string; explanation: string } | null;
  runs: number;
}

export interface ResultsIndex {
  campaigns: IndexedCampaign[];
  runs: IndexedRun[];
  /** A succeeded run per identity key (the earliest recorded), for reuse. */
  succeededByKey: Map<string, IndexedRun>;
}

export async function buildResultsIndex(runsDir: string): Promise<ResultsIndex> {
  const campaigns: IndexedCampaign[] = [];
  const runs: IndexedRun[] = [];
  const succeededByKey = new Map<string, IndexedRun>();
  for (const id of await campaignFolders(runsDir)) {
    const root = join(runsDir, id);
    const { events } = await readEvents(join(root, campaignFileNames.events));
    if (events.length === 0) continue;
    const created = events.find((event) => event.kind === "campaign.created");
    const framed = events.find((event) => event.kind === "leader.framed");
    const stop = events.filter((event) => event.kind === "campaign.stop_decided").at(-1);
    const records = await readIdentityRecords(root);
    let counted = 0;
    for (const record of records) {
      const resultDir = join(root, campaignFileNames.results, record.blueprintId);
      const snapshot = await readResultDir(resultDir);
      if (snapshot.status === undefined) continue;
      const run: IndexedRun = {
        key: record.key,
        campaign: id,
        blueprintId: record.blueprintId,
        resultDir,
        state: snapshot.status.state,
        parts: record.parts,
        lastMetrics: (snapshot.status.lastMetrics as Record<string, number> | null) ?? null,
        step: snapshot.status.step ?? null,
      };
      runs.push(run);
      counted += 1;
      // A reused run points at the one it came from; only first-hand results are offered again.
      if (run.state === "succeeded" && snapshot.finishFlag?.state === "succeeded" && record.reusedFrom === undefined && !succeededByKey.has(run.key)) {
        succeededByKey.set(run.key, run);
      }
    }
    campaigns.push({
      id,
      root,
      title: typeof framed?.title === "string" ? framed.title : null,
      createdAt: created?.time ?? null,
      stop: stop ? { reason: String(stop.reason), explanation: String(stop.explanation ?? "") } : null,
      runs: counted,
    });
  }
  campaigns.sort((a, b) => (a.createdAt ?? "").localeCompare(b.createdAt ?? ""));
  return { campaigns, runs, succeededByKey };
}

async function campaignFolders(runsDir: string): Promise<string[]> {
  try {
    const entries = await readdir(runsDir, { withFileTypes: true });
    return entries
      .filter((entry) => entry.isDirectory() && !entry.name.startsWith("."))
      .map((entry) => entry.name)
      .sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}
