import { Command, CommanderError } from "commander";
import { readFileSync } from "node:fs";
import { A3rError, isA3rError } from "../core/errors.ts";
import { exitCode } from "./exit-codes.ts";
import { registerBlueprintCommands } from "./blueprint-command.ts";
import { registerAuditCommand } from "./audit-command.ts";
import { registerSwarmCommands } from "./swarm-command.ts";
import { registerWorkerCommands } from "./worker-command.ts";
import { registerHostsCommands } from "./hosts-command.ts";
import { registerResearchCommands } from "./research-command.ts";

function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
  return manifest.version;
}

export function buildProgram(): Command {
  const program = new Command();
  program
    .name("a3r")
    .description("Autonomous research for long reinforcement-learning campaigns.")
    .version(packageVersion(), "-V, --version")
    .option("--debug", "show stack traces of errors")
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride();
  registerBlueprintCommands(program);
  registerAuditCommand(program);
  registerSwarmCommands(program);
  registerWorkerCommands(program);
  registerHostsCommands(program);
  registerResearchCommands(program);
  for (const command of program.commands) applyExitOverride(command);
  return program;
}

function applyExitOverride(command: Command): void {
  command.exitOverride();
  command.showHelpAfterError("(run with --help for usage)");
  for (const sub of command.commands) applyExitOverride(sub);
}

/** Runs the CLI and returns the exit code; user errors print one clear message, no stack. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  const debug = argv.includes("--debug");
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === "number" ? process.exitCode : exitCode.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander has already printed its message (or the help/version text).
      if (error.code === "commander.helpDisplayed" || error.code === "commander.version" || error.code === "commander.help") {
        return exitCode.ok;
      }
      return exitCode.usage;
    }
    return reportError(error, debug);
  }
}

export function reportError(error: unknown, debug: boolean): number {
  if (isA3rError(error)) {
    const where = error.where ? `${error.where}: ` : "";
    process.stderr.write(`error [${error.code}] ${where}${error.message}\n`);
    if (error.hint) process.stderr.write(`  hint: ${error.hint}\n`);
    if (debug || !error.isUserError) process.stderr.write(`${error.stack ?? ""}\n`);
    return error.code === "USAGE" ? exitCode.usage : exitCode.failure;
  }
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`error [INTERNAL] ${message}\n`);
  process.stderr.write(debug && error instanceof Error ? `${error.stack}\n` : "  hint: run again with --debug for the stack trace, and report it\n");
  return exitCode.failure;
}

export function usageError(message: string, hint?: string): A3rError {
  return new A3rError("USAGE", message, hint === undefined ? {} : { hint });
}
