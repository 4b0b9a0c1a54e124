import type { Command } from "commander";
import { parseDuration } from "../core/duration.ts";
import { auditPaths } from "../campaign/index.ts";
import { defaultHeartbeatMaxAgeMs } from "../campaign/index.ts";
import { formatFinding } from "../campaign/index.ts";
import { exitCode } from "./exit-codes.ts";
import { A3rError } from "../core/errors.ts";

interface AuditFlags {
  json?: boolean;
  heartbeatMaxAge: string;
  checkPaths?: boolean;
  allowedRoot?: string[];
}

export function registerAuditCommand(program: Command): void {
  program
    .command("audit")
    .description("audit blueprints, result directories and campaign folders; exit 1 on any error finding")
    .argument("<paths...>", "blueprint .md files, result directories (status.json) or campaign folders (topic.md, stages/)")
    .option("--json", "print { findings, summary } as JSON")
    .option("--heartbeat-max-age <duration>", "warn when a live run's last heartbeat is older than this", "10m")
    .option("--check-paths", "check that the paths a blueprint names exist on this machine")
    .option("--allowed-root <dir...>", "result directories of blueprints must lie under one of these")
    .action(async (paths: string[], flags: AuditFlags) => {
      const heartbeatMaxAgeMs = parseDuration(flags.heartbeatMaxAge);
      if (heartbeatMaxAgeMs === undefined || heartbeatMaxAgeMs <= 0) {
        throw new A3rError("USAGE", `--heartbeat-max-age ${JSON.stringify(flags.heartbeatMaxAge)} is not a duration`, {
          hint: `write it like 90s, 10m or 1h (default ${defaultHeartbeatMaxAgeMs / 60_000}m)`,
        });
      }
      const report = await auditPaths(paths, {
        heartbeatMaxAgeMs,
        ...(flags.checkPaths ? { checkPaths: true } : {}),
        ...(flags.allowedRoot ? { allowedRoots: flags.allowedRoot } : {}),
      });
      const { errors, warnings, targets } = report.summary;
      if (flags.json) {
        process.stdout.write(`${JSON.stringify({ findings: report.findings, summary: { errors, warnings, paths: targets } }, null, 2)}\n`);
      } else {
        for (const finding of report.findings) process.stdout.write(`${formatFinding(finding)}\n`);
        const audited = targets.map((target) => `${target.kind} ${target.path}`).join(", ");
        process.stdout.write(`${errors} error${errors === 1 ? "" : "s"}, ${warnings} warning${warnings === 1 ? "" : "s"} in ${audited}\n`);
      }
      process.exitCode = errors > 0 ? exitCode.failure : exitCode.ok;
    });
}
