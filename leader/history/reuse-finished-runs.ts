import { dirname } from "node:path";
import type { Blueprint } from "../../blueprints/index.ts";
import { redactValue } from "../../core/redact.ts";
import { appendEventOnce, readEvents } from "../../campaign/index.ts";
import { JsonlLedger } from "../../campaign/index.ts";
import { appendIdentityRecord, readIdentityRecords } from "./identity-records.ts";
import { materializeReusedRun } from "./reuse-run.ts";
import { buildResultsIndex } from "./results-index.ts";
import { runIdentity } from "./run-identity.ts";

export interface ReusableItem {
  blueprint: Blueprint;
  file: string;
  resultDir: string;
}

export interface ReuseOptions {
  /** The campaign folder (runs/<id>); its parent is the runs folder the index reads. */
  campaignRoot: string;
  campaignId: string;
  eventsFile: string;
  ledgerFile: string;
  /** False: record identities but train everything (`a3r research --fresh`). */
  enabled: boolean;
}

/**
 * Before a stage is dispatched: each blueprint whose run an earlier campaign already
 * finished (same identity, run-identity.ts) gets that result (reuse-run.ts) instead of a
 * launch, logged as `run.reused` and booked as zero GPU-hours; the rest are returned to be
 * dispatched, their identities recorded for later campaigns. Idempotent: a node re-run
 * after a crash finds the reused results in place and dispatches the same items. Runs of
 * this campaign are never offered to itself: a replicate inside a campaign is a new run.
 */
export async function reuseFinishedRuns<T extends ReusableItem>(items: readonly T[], options: ReuseOptions): Promise<{ toDispatch: T[]; reused: string[] }> {
  const alreadyReused = new Set(
    (await readEvents(options.eventsFile)).events.filter((event) => event.kind === "run.reused").map((event) => String(event.blueprintId)),
  );
  const recorded = new Map((await readIdentityRecords(options.campaignRoot)).map((record) => [record.blueprintId, record]));
  const index = options.enabled ? await buildResultsIndex(dirname(options.campaignRoot)) : undefined;
  const toDispatch: T[] = [];
  const reused: string[] = [];
  for (const item of items) {
    const id = item.blueprint.id;
    if (alreadyReused.has(id)) {
      reused.push(id);
      continue;
    }
    const record = recorded.get(id);
    if (record?.reusedFrom !== undefined) {
      // Reused before a crash cut the campaign's event short: log it now.
      await appendEventOnce(options.eventsFile, "run.reused", { blueprintId: id }, { from: record.reusedFrom, identity: record.key });
      reused.push(id);
      continue;
    }
    if (record !== undefined) {
      toDispatch.push(item);
      continue;
    }
    const identity = await runIdentity(item.blueprint);
    if (identity.identity === null) {
      toDispatch.push(item);
      continue;
    }
    const { key, parts } = identity.identity;
    const source = index?.succeededByKey.get(key);
    if (source === undefined || source.campaign === options.campaignId) {
      await appendIdentityRecord(options.campaignRoot, redactValue({ blueprintId: id, key, parts }));
      toDispatch.push(item);
      continue;
    }
    await materializeReusedRun({ source: source.resultDir, target: item.resultDir, blueprintFile: item.file, identityKey: key });
    await appendIdentityRecord(options.campaignRoot, redactValue({ blueprintId: id, key, parts, reusedFrom: source.resultDir }));
    const gpus = Number(item.blueprint.frontMatter.gpus ?? 0);
    if (Number.isInteger(gpus) && gpus > 0) await new JsonlLedger(options.ledgerFile).record({ kind: "gpu", blueprintId: id, host: "reused", gpus, hours: 0 });
    await appendEventOnce(options.eventsFile, "run.reused", { blueprintId: id }, { from: source.resultDir, fromCampaign: source.campaign, identity: key });
    reused.push(id);
  }
  return { toDispatch, reused };
}
