import { stat } from "node:fs/promises";
import { join } from "node:path";
import { A3rError } from "../core/errors.ts";
import { sortFindings, summarizeFindings, type Finding, type FindingSummary } from "./finding.ts";
import { looksLikeResultDir } from "./result-dir-reader.ts";
import { auditResultDir } from "./audit-result-dir.ts";
import { auditCampaign, type CampaignAuditOptions } from "./audit-campaign.ts";
import { blueprintInspector } from "./blueprint-inspector.ts";
import { campaignFileNames } from "./campaign-paths.ts";

/**
 * `a3r audit` on any mix of paths: each path is recognized as a blueprint file, a result
 * directory or a campaign folder, and audited as such. Every path is classified before
 * any is audited, so a typo fails the command at once instead of after a long audit.
 */
export type AuditTargetKind = "blueprint" | "result-dir" | "campaign";

export interface AuditTarget {
  path: string;
  kind: AuditTargetKind;
}

export interface AuditReport {
  findings: Finding[];
  summary: FindingSummary & { paths: number; targets: AuditTarget[] };
}

/** FILE_NOT_FOUND for a missing path, PATH_KIND_UNKNOWN for anything else unrecognized. */
export async function classifyAuditPath(path: string): Promise<AuditTarget> {
  let info;
  try {
    info = await stat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    throw new A3rError("FILE_NOT_FOUND", "no such file or folder", {
      where: path,
      hint: "give the path of a blueprint .md file, a result directory or a campaign folder",
    });
  }
  if (info.isFile()) {
    if (path.endsWith(".md")) return { path, kind: "blueprint" };
    throw unknownKind(path, "it is a file but not a blueprint (.md)");
  }
  if (info.isDirectory()) {
    if (await looksLikeResultDir(path)) return { path, kind: "result-dir" };
    if ((await exists(join(path, campaignFileNames.stages))) || (await exists(join(path, campaignFileNames.topic)))) return { path, kind: "campaign" };
    throw unknownKind(path, "the folder has neither status.json/finish.flag (a result directory) nor stages/ or topic.md (a campaign)");
  }
  throw unknownKind(path, "it is neither a file nor a folder");
}

function unknownKind(path: string, why: string): A3rError {
  return new A3rError("PATH_KIND_UNKNOWN", `cannot audit this path: ${why}`, {
    where: path,
    hint: "a3r audit takes blueprint .md files, result directories (with status.json) and campaign folders (with topic.md or stages/)",
  });
}

export async function auditPaths(paths: readonly string[], options: CampaignAuditOptions = {}): Promise<AuditReport> {
  const targets: AuditTarget[] = [];
  for (const path of paths) targets.push(await classifyAuditPath(path));
  const findings: Finding[] = [];
  for (const target of targets) findings.push(...(await auditTarget(target, options)));
  const sorted = sortFindings(findings);
  return { findings: sorted, summary: { ...summarizeFindings(sorted), paths: targets.length, targets } };
}

export async function auditTarget(target: AuditTarget, options: CampaignAuditOptions = {}): Promise<Finding[]> {
  switch (target.kind) {
    case "blueprint": {
      const inspector = options.blueprints ?? blueprintInspector;
      return inspector.audit(target.path, {
        ...(options.checkPaths === undefined ? {} : { checkPaths: options.checkPaths }),
        ...(options.allowedRoots === undefined ? {} : { allowedRoots: options.allowedRoots }),
      });
    }
    case "result-dir":
      return auditResultDir(target.path, options);
    case "campaign":
      return auditCampaign(target.path, options);
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
