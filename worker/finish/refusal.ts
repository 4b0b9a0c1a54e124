import { hostname } from "node:os";
import { readFile } from "node:fs/promises";
import type { Blueprint, Finding } from "../../blueprints/index.ts";
import { readRunStatus, resultDirPaths, ResultDirWriter } from "../../campaign/index.ts";
import { pathExists } from "../../core/path-exists.ts";
import { printable } from "../../core/printable-text.ts";
import { confineResultDir } from "../launch/result-dir-confinement.ts";

/**
 * A blueprint the worker's command policy refuses still gets a result directory, so the
 * leader, `a3r status` and the report see a run that was refused and why, instead of a run
 * that never appeared: status `refused` with the reason, the blueprint as given, the
 * findings as an event and in attempts.md, result.md, and finish.flag last. Nothing is
 * prepared or launched. A directory that already holds a run is left alone.
 */
export async function recordRefusal(
  blueprint: Blueprint,
  resultDir: string,
  findings: readonly Finding[],
  owner = `${hostname()}:${process.pid}`,
): Promise<boolean> {
  // A refusal is no reason to write through a symlink: such a folder gets no record.
  if (
    !(await confineResultDir(resultDir, []).then(
      () => true,
      () => false,
    ))
  )
    return false;
  const paths = resultDirPaths(resultDir);
  if ((await readRunStatus(paths.status).catch(() => ({ exists: true }))).exists || (await pathExists(paths.finishFlag))) return false;
  const first = findings[0]!;
  const reason = `refused by the command policy: ${first.message}${findings.length > 1 ? ` (and ${findings.length - 1} more)` : ""}`;
  const writer = await ResultDirWriter.open(resultDir, owner, { ttlMs: 30_000, staleMs: 5_000, timeoutMs: 15_000 });
  try {
    await writer.writeStatus({ state: "queued", host: hostname() });
    await writer.writeStatus({ state: "refused", reason });
    if (blueprint.file) await writer.writeBlueprint(await readFile(blueprint.file, "utf8"));
    await writer.appendEvent("run.refused", {
      blueprint: blueprint.id,
      findings: findings.map((finding) => ({ code: finding.code, line: finding.line, message: finding.message })),
    });
    const list = findings.map((finding) => `- ${finding.code} (line ${finding.line}): ${finding.message}; ${finding.hint}`).join("\n");
    await writer.appendAttempt({
      attempt: 0,
      title: "refused by the command policy, nothing launched",
      body: `${list}\n\nFix the Command (or the campaign's \`commands.allow\`) and run the blueprint in a new result directory.`,
    });
    await writer.writeResult(
      printable(
        [
          `# Result: ${blueprint.id}`,
          "",
          "- Outcome: **refused**",
          `- Reason: ${reason}`,
          "- Nothing was prepared or launched; no metrics were recorded.",
          "",
          "## Findings",
          "",
          list,
          "",
        ].join("\n"),
      ),
    );
    await writer.finish();
  } finally {
    await writer.release().catch(() => false);
  }
  return true;
}
