import { Command, CommanderError } from "commander";
import { readFileSync } from "node:fs";
import { A3rError, isA3rError } from "../core/errors.ts";
import { exitCode } from "./exit-codes.ts";

type Register = (program: Command) => void;

/**
 * Each command group and the modules that define it, loaded only when its command runs:
 * `a3r blueprint validate` or `a3r worker run` must not pay for LangGraph, SQLite, ssh2 or
 * the swarm server at start-up. Help and unknown commands load every group.
 */
const commandGroups: ReadonlyArray<{ names: readonly string[]; load: () => Promise<Register> }> = [
  { names: ["blueprint"], load: async () => (await import("./blueprint-command.ts")).registerBlueprintCommands },
  { names: ["audit"], load: async () => (await import("./audit-command.ts")).registerAuditCommand },
  { names: ["swarm"], load: async () => (await import("./swarm-command.ts")).registerSwarmCommands },
  { names: ["worker"], load: async () => (await import("./worker-command.ts")).registerWorkerCommands },
  { names: ["hosts", "dispatch", "runs"], load: async () => (await import("./hosts-command.ts")).registerHostsCommands },
  { names: ["topic"], load: async () => (await import("./topic-command.ts")).registerTopicCommands },
  { names: ["history"], load: async () => (await import("./history-command.ts")).registerHistoryCommand },
  { names: ["writeup"], load: async () => (await import("./writeup-command.ts")).registerWriteupCommand },
  { names: ["research", "resume", "status", "report", "demo", "stop"], load: async () => (await import("./research-command.ts")).registerResearchCommands },
];

/** The first argument that is not an option: the command the user asked for. */
function requestedCommand(argv: readonly string[]): string | undefined {
  return argv.slice(2).find((argument) => !argument.startsWith("-"));
}

function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
  return manifest.version;
}

export async function buildProgram(argv: readonly string[] = []): Promise<Command> {
  const program = new Command();
  program
    .name("a3r")
    .description("Autonomous research for long reinforcement-learning campaigns.")
    .version(packageVersion(), "-V, --version")
    .option("--debug", "show stack traces of errors")
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride();
  const requested = requestedCommand(argv);
  const group = commandGroups.find((candidate) => requested !== undefined && candidate.names.includes(requested));
  for (const register of await Promise.all((group ? [group] : commandGroups).map((candidate) => candidate.load()))) register(program);
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
  const program = await buildProgram(argv);
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
    // A message that already opens with its place (TOPIC_INVALID's "topic.md:1: ...") is not prefixed twice.
    const where = error.where && !error.message.startsWith(`${error.where}:`) ? `${error.where}: ` : "";
    process.stderr.write(`error [${error.code}] ${where}${error.message}\n`);
    if (error.hint) process.stderr.write(`  hint: ${error.hint}\n`);
    // A stack trace is for a3r's own bugs and for --debug; a model that timed out or a
    // server that refused is told in the line and its hint.
    if (debug) process.stderr.write(`${error.stack ?? ""}\n`);
    else if (error.code === "INTERNAL") process.stderr.write("  hint: run again with --debug for the stack trace, and report it\n");
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
