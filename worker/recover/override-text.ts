import type { Overrides } from "../../blueprints/index.ts";
import { a3rBin } from "../launch/attempt-launch.ts";
import { configCopyPath, planAttempt } from "../launch/attempt-plan.ts";
import type { RunContext } from "../run/run-context.ts";

/**
 * The command lines a diagnosis's overrides rewrite: the lines of the next attempt's final
 * commands (placeholders filled: `{port}`, `{overrides}`, `{overrides_json}`, the swarm
 * server's `--port`) that are not lines of the same commands under the overrides in force.
 * An override that only changes a config value rewrites none; one that reaches the command
 * text changes what runs as much as a new command does, so it waits for a person like one
 * (failure-handling.ts) unless the campaign's `commands.allow` covers the new lines.
 *
 * Empty when the new values cannot make a plan (a value of the wrong type): the launch
 * refuses that plan by itself, with the reason, before anything starts.
 */
export function commandLinesRewrittenBy(context: RunContext, command: string, before: Overrides, after: Overrides): string[] {
  const attempt = context.attempt + 1;
  const linesWith = (overrides: Overrides): string[] | undefined => {
    try {
      const plan = planAttempt({
        blueprint: context.blueprint,
        resultDir: context.resultDir,
        settings: context.settings,
        attempt,
        overrides,
        command,
        resume: false,
        configCopy: configCopyPath(context.resultDir, attempt, context.blueprint.config),
        ...(context.gpus === undefined ? {} : { gpus: context.gpus }),
        a3rBin,
        nodeExecutable: process.execPath,
        swarmUrl: "http://127.0.0.1:1",
      });
      return [...(plan.serverCommand ? [plan.serverCommand] : []), ...plan.commands].flatMap((text) => text.split("\n").map((line) => line.trim()));
    } catch {
      return undefined;
    }
  };
  const next = linesWith(after);
  if (!next) return [];
  const known = new Set(linesWith(before) ?? []);
  return [...new Set(next.filter((line) => line !== "" && !known.has(line)))];
}
