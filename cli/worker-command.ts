import { InvalidArgumentError, type Command } from "commander";
import { join, resolve } from "node:path";
import { JsonlLedger } from "../campaign/index.ts";
import { chatModelFromEnv, describeModelChoice, type ChatModel } from "../llm/index.ts";
import { findCampaignOf } from "../campaign/index.ts";
import { budgetedWorkerModel, readCampaignBudget, type CampaignBudget } from "../worker/index.ts";
import { describeRun } from "../worker/index.ts";
import { createProgressReporter } from "../worker/index.ts";
import { loadBlueprintForRun, runWorker } from "../worker/index.ts";
import { workerSettingsOf } from "../worker/index.ts";
import { prepareDemoBlueprint, type DemoMode } from "../worker/index.ts";
import { answerApproval } from "../worker/index.ts";
import { hostname, userInfo } from "node:os";
import { registerWorkerDaemonCommand } from "./worker-daemon-command.ts";
import { swarmConfigSchema } from "../swarm/schema.ts";
import { exitCode } from "./exit-codes.ts";
import { isA3rError } from "../core/errors.ts";

interface RunFlags {
  resultDir?: string;
  dryRun?: boolean;
  gpus?: string;
  sandbox?: string;
  ledger?: string;
  llmTokens?: number;
  llmUsd?: number;
  llm: boolean;
  quiet?: boolean;
  json?: boolean;
  allowedRoot?: string[];
}

function gpuList(value: string): string {
  if (!/^\d+(,\d+)*$/.test(value.trim())) throw new InvalidArgumentError("--gpus takes GPU indices such as 0 or 0,1.");
  return value.trim();
}

function positiveNumber(flag: string, example: string, whole: boolean): (value: string) => number {
  return (value) => {
    const number = Number(value);
    if (value.trim() === "" || !Number.isFinite(number) || number <= 0 || (whole && !Number.isInteger(number))) {
      throw new InvalidArgumentError(`${flag} takes a positive ${whole ? "whole number" : "number"}, such as ${example}.`);
    }
    return number;
  };
}

function demoMode(value: string): DemoMode {
  if (value !== "swarm" && value !== "classic") throw new InvalidArgumentError("--mode takes swarm or classic.");
  return value;
}

/** `a3r worker run`: one blueprint, supervised to a complete result directory. */
export function registerWorkerCommands(program: Command): void {
  const worker = program.command("worker").description("execute blueprints on this machine");
  worker
    .command("run")
    .description("prepare, launch, supervise, recover and report one blueprint; re-attaches to a live run of it instead of launching twice")
    .argument("<blueprint>", "the blueprint .md file")
    .option("--result-dir <dir>", "write the result directory here instead of the blueprint's Result Directory")
    .option("--dry-run", "print what would be prepared, launched and watched; change nothing")
    .option("--gpus <list>", "GPU slots for CUDA_VISIBLE_DEVICES, e.g. 0,1", gpuList)
    .option("--sandbox <mode>", "bwrap | none: the host's sandbox for the run's commands (hosts.yaml sandbox:); default A3R_SANDBOX, else bwrap where it works")
    .option(
      "--ledger <file>",
      "ledger for LLM tokens and GPU-hours; default: the campaign's ledger.jsonl when the result directory is <campaign>/results/<id>, else <result dir>/ledger.jsonl",
    )
    .option(
      "--llm-tokens <n>",
      "LLM budget in tokens, counted over the whole ledger; default: the campaign topic's budgets.llm_tokens",
      positiveNumber("--llm-tokens", "2000000", true),
    )
    .option(
      "--llm-usd <x>",
      "LLM budget in US dollars, counted over the whole ledger; default: the campaign topic's budgets.llm_usd",
      positiveNumber("--llm-usd", "20", false),
    )
    .option("--no-llm", "never consult a language model, even when one is configured")
    .option(
      "--allowed-root <dir>",
      "refuse a result directory whose real path is not below this folder (repeatable; default: the campaign's results/ for a campaign run)",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option("--quiet", "no progress output")
    .option("--json", 'print the outcome as JSON on stdout (an error too: {"error": {code, message, ...}})')
    .action((blueprintPath: string, flags: RunFlags) => withJsonErrors(flags.json === true, () => runBlueprint(blueprintPath, flags)));

  worker
    .command("demo")
    .description("run an example blueprint on this machine: the embedded swarm policy learning a task (or a classic training program), supervised end to end")
    .option("--mode <mode>", "swarm (a3r swarm serve plus two clients) or classic (one training program)", demoMode, "swarm")
    .option("--runs-dir <dir>", "where the localized blueprint and its result directory go", "runs/worker-demo")
    .option("--quiet", "no progress output")
    .option("--json", "print the outcome as JSON on stdout")
    .action(async (flags: { mode: DemoMode; runsDir: string; quiet?: boolean; json?: boolean }) => {
      const blueprintPath = await prepareDemoBlueprint(flags.mode, { runsDir: flags.runsDir });
      if (!flags.quiet) process.stderr.write(`demo blueprint for this machine: ${blueprintPath}\n`);
      await withJsonErrors(flags.json === true, () =>
        runBlueprint(blueprintPath, { llm: false, ...(flags.quiet ? { quiet: true } : {}), ...(flags.json ? { json: true } : {}) }),
      );
    });

  worker
    .command("approve")
    .description(
      "approve (or --refuse) the command a diagnosis proposed for a run that is awaiting_approval; a command line the blueprint did not contain and the campaign's commands.allow does not cover runs only after this",
    )
    .argument("<run>", "the run's result directory (the folder with status.json)")
    .option("--refuse", "refuse the proposed command: the run fails with the diagnosis")
    .option("--note <text>", "why, recorded in the run's events")
    .option("--command <text>", "approve only if this is exactly the command awaiting approval")
    .option("--by <name>", "who answers, recorded in events.jsonl (default: user@host)")
    .action(async (run: string, flags: { refuse?: boolean; note?: string; command?: string; by?: string }) => {
      const by = flags.by ?? `${safeUser()}@${hostname()}`;
      const { pending, decision } = await answerApproval({
        resultDir: run,
        by,
        ...(flags.refuse ? { refuse: true } : {}),
        ...(flags.note ? { note: flags.note } : {}),
        ...(flags.command !== undefined ? { expectCommand: flags.command } : {}),
      });
      process.stdout.write(
        `${decision.decision === "approved" ? "approved" : "refused"} for attempt ${pending.attempt + 1} of ${resolve(run)}:\n${pending.command}\n` +
          `(the run's worker picks the answer up at its next poll)\n`,
      );
    });

  registerWorkerDaemonCommand(worker);
}

function safeUser(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? "someone";
  }
}

/** Runs one blueprint to a complete result directory and sets the exit code from its outcome. */
/**
 * Under --json, stdout is for machines whatever happens: an error (RESULT_DIR_UNWRITABLE,
 * BLUEPRINT_INVALID, ...) is printed there as `{"error": {code, message, where, hint, details}}`
 * too, and still goes to stderr and sets the exit code as without --json.
 */
async function withJsonErrors(json: boolean, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    if (json) {
      const body = isA3rError(error) ? error.toJSON() : { code: "INTERNAL", message: error instanceof Error ? error.message : String(error) };
      process.stdout.write(`${JSON.stringify({ error: body })}\n`);
    }
    throw error;
  }
}

async function runBlueprint(blueprintPath: string, flags: RunFlags): Promise<void> {
  // A blueprint the command policy refuses leaves a `refused` result directory (not on --dry-run).
  const refusal = flags.dryRun ? {} : { recordRefusal: flags.resultDir === undefined ? {} : { resultDir: flags.resultDir } };
  const blueprint = await loadBlueprintForRun(blueprintPath, undefined, refusal);
  const resultDir = resolve(flags.resultDir ?? blueprint.resultDir);
  const choice = flags.llm ? describeModelChoice(process.env) : undefined;
  if (flags.dryRun) {
    const settings = workerSettingsOf(blueprint, resultDir);
    process.stdout.write(
      await describeRun(blueprint, settings, resultDir, {
        configSchema: swarmConfigSchema,
        ...(flags.gpus ? { gpus: flags.gpus } : {}),
        ...(flags.sandbox ? { sandbox: flags.sandbox } : {}),
        ...(choice ? { model: choice } : {}),
      }),
    );
    return;
  }
  // A run in a campaign folder books in the campaign's ledger and spends the campaign's
  // LLM budget (worker/recover/campaign-llm.ts); flags say it for a run elsewhere.
  const campaign = await findCampaignOf(resultDir);
  const ledgerFile = resolve(flags.ledger ?? campaign?.ledgerFile ?? join(resultDir, "ledger.jsonl"));
  const ledger = new JsonlLedger(ledgerFile);
  let model: ChatModel | null = null;
  if (choice) {
    const fromFlags = flags.llmTokens !== undefined || flags.llmUsd !== undefined;
    const budget: CampaignBudget = fromFlags
      ? {
          ok: true,
          limit: { ...(flags.llmTokens === undefined ? {} : { tokens: flags.llmTokens }), ...(flags.llmUsd === undefined ? {} : { usd: flags.llmUsd }) },
        }
      : campaign
        ? await readCampaignBudget(campaign.topicFile)
        : { ok: true, limit: {} };
    model = budgetedWorkerModel(
      await chatModelFromEnv(process.env, { sink: ledger }),
      ledgerFile,
      budget,
      fromFlags ? { tokens: "--llm-tokens", usd: "--llm-usd" } : undefined,
    );
  }
  const progress = createProgressReporter(process.stderr, { quiet: flags.quiet === true });
  // TERM or INT cancels the run (its process groups too); only a SIGKILLed worker leaves it running.
  const cancel = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    progress.event(`${signal}: cancelling the run (TERM, then KILL to its process groups)`);
    // The run's cause, as its reason will say it: a stop (a3r stop, the host's cancel), not a failure.
    cancel.abort(`stopped: the worker got ${signal} (a3r stop or the host's cancel)`);
  };
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  const outcome = await runWorker({
    blueprintPath,
    resultDir,
    model,
    ledger,
    progress,
    signal: cancel.signal,
    configSchemas: { swarm: swarmConfigSchema },
    ...(flags.gpus ? { gpus: flags.gpus } : {}),
    ...(flags.sandbox ? { sandbox: flags.sandbox } : {}),
    ...(flags.allowedRoot ? { allowedRoots: flags.allowedRoot.map((root) => resolve(root)) } : {}),
  });
  if (flags.json) process.stdout.write(`${JSON.stringify(outcome)}\n`);
  else process.stdout.write(`${blueprint.id}: ${outcome.state}${outcome.reason ? ` (${outcome.reason})` : ""}; result directory ${outcome.resultDir}\n`);
  process.exitCode = outcome.state === "succeeded" ? exitCode.ok : exitCode.failure;
}
