import { readdir, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import type { Finding } from "./finding.ts";
import type { CampaignPaths } from "./campaign-paths.ts";
import { campaignAt, listStages } from "./campaign-store.ts";
import { isSafeBlueprintId } from "../blueprints/front-matter-schema.ts";
import { readEvents, type CampaignEvent } from "./event-log.ts";
import { leaderDatabaseProblem } from "./leader-database.ts";
import { readLedger } from "./ledger.ts";
import { auditResultDir, problemToFinding, type ResultDirAuditOptions } from "./audit-result-dir.ts";
import { blueprintInspector, type BlueprintInspector } from "./blueprint-inspector.ts";

/**
 * Checks a campaign folder as a whole: every blueprint the leader wrote is accounted for
 * (it has a result directory, or an event says why not), each result directory passes
 * its own audit, each blueprint passes the blueprint audit, and the event log and ledger
 * parse.
 *
 * leader.sqlite (LangGraph's) is checked for being a readable SQLite file, not for what
 * its checkpoints say. Left out: whether the leader's decisions were wise.
 */
export interface CampaignAuditOptions extends ResultDirAuditOptions {
  checkPaths?: boolean;
  allowedRoots?: string[];
  blueprints?: BlueprintInspector;
}

/** Event kinds that account for a blueprint without a result directory. */
export const blueprintExplainedKinds = ["blueprint.skipped", "blueprint.cancelled", "blueprint.abandoned", "blueprint.superseded"] as const;
/** Event kinds that say a result is on its way (a warning while it has not arrived). */
export const blueprintPendingKinds = ["blueprint.dispatched", "run.launched"] as const;

export async function auditCampaign(root: string, options: CampaignAuditOptions = {}): Promise<Finding[]> {
  const paths = campaignAt(root);
  const findings: Finding[] = [];
  const events = await auditCampaignFiles(root, paths, findings);
  await auditStageFolderNames(paths, findings);
  const seen = await auditStageBlueprints(paths, events, options, findings);
  await auditOrphanedResults(paths, seen, findings);
  return findings;
}

type AddFinding = (file: string, line: number, severity: Finding["severity"], code: string, message: string, hint: string) => void;

function adder(findings: Finding[]): AddFinding {
  return (file, line, severity, code, message, hint) => {
    findings.push({ file, line, severity, code, message, hint });
  };
}

/** topic.md, events.jsonl, ledger.jsonl and leader.sqlite; returns the events read. */
async function auditCampaignFiles(root: string, paths: CampaignPaths, findings: Finding[]): Promise<CampaignEvent[]> {
  const add = adder(findings);
  if (!(await isFile(paths.topic))) {
    add(
      paths.topic,
      0,
      "error",
      "CAMPAIGN_TOPIC_MISSING",
      "topic.md is missing: the campaign has no research question",
      "write the topic the campaign was started with into topic.md",
    );
  }

  const eventsRead = await readEvents(paths.events);
  findings.push(...eventsRead.problems.map(problemToFinding));
  if (!(await isFile(paths.events))) {
    add(
      paths.events,
      0,
      "warning",
      "CAMPAIGN_FILE_MISSING",
      "events.jsonl is missing: no decision of the leader is on record",
      "the campaign store creates it; append events with campaign/event-log.ts",
    );
  }
  const ledgerRead = await readLedger(paths.ledger);
  findings.push(...ledgerRead.problems.map(problemToFinding));
  const checkpointProblem = await leaderDatabaseProblem(paths.leaderDatabase, paths.events);
  if (checkpointProblem !== null) {
    add(
      paths.leaderDatabase,
      0,
      "error",
      "CAMPAIGN_CHECKPOINT_UNREADABLE",
      `leader.sqlite ${checkpointProblem}: the leader cannot resume from it`,
      `the events log and result directories are intact: a3r resume ${basename(root)} --rebuild sets it aside and replays the campaign into a fresh checkpoint`,
    );
  }
  return eventsRead.events;
}

async function auditStageFolderNames(paths: CampaignPaths, findings: Finding[]): Promise<void> {
  const add = adder(findings);
  for (const name of await readdirOrEmpty(paths.stages)) {
    if (!/^\d+$/.test(name)) {
      add(
        join(paths.stages, name),
        0,
        "warning",
        "STAGE_FOLDER_INVALID",
        `stages/${name} is not a stage number; it is ignored`,
        "stage folders are named by their number: stages/1, stages/2 ...",
      );
    }
  }
}

/**
 * Each stage's plan and blueprints: the blueprint audit, the file named by its id, ids
 * unique in the campaign, and each accounted for. Returns the blueprint files by id.
 */
async function auditStageBlueprints(
  paths: CampaignPaths,
  events: readonly CampaignEvent[],
  options: CampaignAuditOptions,
  findings: Finding[],
): Promise<Map<string, string>> {
  const add = adder(findings);
  const inspector = options.blueprints ?? blueprintInspector;
  const stages = await listStages(paths);
  const seen = new Map<string, string>();
  for (const stage of stages) {
    if (!stage.hasPlan && stage.blueprintFiles.length > 0) {
      add(
        stage.paths.plan,
        0,
        "warning",
        "STAGE_PLAN_MISSING",
        `stage ${stage.number} has blueprints but no plan.md`,
        "the leader writes the stage's hypotheses and predictions to plan.md before its blueprints",
      );
    }
    for (const file of stage.blueprintFiles) {
      findings.push(
        ...(await inspector.audit(file, {
          ...(options.checkPaths === undefined ? {} : { checkPaths: options.checkPaths }),
          ...(options.allowedRoots === undefined ? {} : { allowedRoots: options.allowedRoots }),
        })),
      );
      let id: string;
      try {
        id = await inspector.readId(file);
      } catch {
        // The blueprint audit above already says why it cannot be read.
        continue;
      }
      if (basename(file, ".md") !== id) {
        add(
          file,
          1,
          "warning",
          "BLUEPRINT_FILE_NAME_MISMATCH",
          `the file is named ${basename(file)} but the blueprint id is ${id}`,
          `rename it to ${id}.md so people and tools find it by id`,
        );
      }
      const earlier = seen.get(id);
      if (earlier !== undefined) {
        add(
          file,
          1,
          "error",
          "BLUEPRINT_ID_DUPLICATE",
          `blueprint id ${id} is also used by ${earlier}`,
          "an id is the idempotency key of a run: give each blueprint of a campaign its own id",
        );
        continue;
      }
      seen.set(id, file);
      if (!isSafeBlueprintId(id)) continue;
      findings.push(...(await accountFor(id, file, paths.result(id), events, options)));
    }
  }
  return seen;
}

async function auditOrphanedResults(paths: CampaignPaths, seen: ReadonlyMap<string, string>, findings: Finding[]): Promise<void> {
  const add = adder(findings);
  for (const name of await readdirOrEmpty(paths.results)) {
    const dir = join(paths.results, name);
    if (!seen.has(name) && (await isDirectory(dir))) {
      add(
        dir,
        0,
        "warning",
        "RESULT_ORPHANED",
        `results/${name} belongs to no blueprint under stages/*/blueprints`,
        "restore the blueprint file, or move the folder out of results/",
      );
    }
  }
}

async function accountFor(
  id: string,
  blueprintFile: string,
  resultDir: string,
  events: readonly CampaignEvent[],
  options: ResultDirAuditOptions,
): Promise<Finding[]> {
  if (await isDirectory(resultDir)) return auditResultDir(resultDir, options);
  const about = events.filter((event) => event.blueprintId === id);
  const explained = about.some(
    (event) => (blueprintExplainedKinds as readonly string[]).includes(event.kind) || (typeof event.reason === "string" && event.reason.trim() !== ""),
  );
  if (explained) return [];
  if (about.some((event) => (blueprintPendingKinds as readonly string[]).includes(event.kind))) {
    return [
      {
        file: blueprintFile,
        line: 1,
        severity: "warning",
        code: "BLUEPRINT_RESULT_PENDING",
        message: `blueprint ${id} was dispatched but results/${id}/ has not arrived yet`,
        hint: "wait for the run, or fetch its result directory from the host",
      },
    ];
  }
  return [
    {
      file: blueprintFile,
      line: 1,
      severity: "error",
      code: "BLUEPRINT_UNACCOUNTED",
      message: `blueprint ${id} has no result directory results/${id}/ and no event says why`,
      hint: `run it, or append {"kind":"blueprint.skipped","blueprintId":"${id}","reason":"..."} to the campaign's events.jsonl`,
    },
  ];
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).sort();
  } catch {
    return [];
  }
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}
