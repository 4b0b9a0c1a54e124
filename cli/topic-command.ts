import { access, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { createInterface } from "node:readline/promises";
import type { Command } from "commander";
import { InvalidArgumentError } from "commander";
import { A3rError } from "../core/errors.ts";
import { parseTopic } from "../leader/index.ts";
import { collect, draftFromFile, type DraftFlags } from "./research/draft-from-file.ts";

interface TopicNewFlags extends DraftFlags {
  from: string;
  question?: string;
  out: string;
  force?: boolean;
  yes?: boolean;
}

/**
 * `a3r topic new --from blueprint.md|swarm.yaml`: a topic in a minute. Everything the file
 * says is taken from it; what it cannot say (the question) is asked for on a terminal, or
 * taken from `--question`, or defaulted with `--yes`; every default is printed.
 */
export function registerTopicCommands(program: Command): void {
  const topic = program.command("topic").description("write research topics");
  topic
    .command("new")
    .description("draft a topic from a blueprint or a swarm/config file: base experiment, metric and candidate knobs from it")
    .requiredOption("--from <file>", "a blueprint (.md) or a config (.yaml, .json) the base experiment comes from")
    .option("--question <text>", "the research question (asked for on a terminal when absent)")
    .option("--knob <key=v1,v2>", "a config key to vary and its candidate values (repeatable; default: proposed from the config)", collect)
    .option("--metric <name[:goal]>", "the metric and its goal (default: the blueprint's, else the reward mean, maximized)")
    .option("--command <text>", "the base command (needed when drafting from a config alone)")
    .option("--seeds <n>", "seeds per configuration (default 3)", positiveInteger)
    .option("--max-steps <n>", "training steps per run (default: the blueprint's max_steps override, else the config's)", positiveInteger)
    .option("--out <file>", "where to write the topic", "topic.md")
    .option("--force", "overwrite --out if it exists")
    .option("--yes", "take every default without asking (for scripts)")
    .action(async (flags: TopicNewFlags) => {
      const out = resolve(flags.out);
      if (!flags.force && (await exists(out)))
        throw new A3rError("USAGE", `${flags.out} exists`, { where: "--out", hint: "choose another --out, or add --force to overwrite it" });
      const question = flags.question ?? (await askQuestion(flags.yes === true));
      const draft = await draftFromFile(flags.from, question, out, flags);
      // The draft must be a topic the planner can run; a bug here must not write a bad file.
      parseTopic(draft.text, { file: out });
      await writeFile(out, draft.text);
      for (const line of draft.assumptions) process.stderr.write(`assumed ${line}\n`);
      if (draft.proposals.length > 0)
        process.stderr.write(
          `knobs the config offers: ${draft.proposals.map((proposal) => `${proposal.key} (${proposal.candidates.join(", ")})`).join("; ")}\n`,
        );
      process.stdout.write(`topic: ${out}\nnext: a3r research ${flags.out}\n`);
    });
}

const defaultQuestion = "Which setting trains best?";

async function askQuestion(yes: boolean): Promise<string> {
  if (yes) return defaultQuestion;
  if (!process.stdin.isTTY)
    throw new A3rError("USAGE", "the research question is missing", {
      where: "--question",
      hint: 'give --question "Which lr learns fastest?", or --yes for a generic one',
    });
  const terminal = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = (await terminal.question("research question: ")).trim();
    return answer === "" ? defaultQuestion : answer;
  } finally {
    terminal.close();
  }
}

function positiveInteger(value: string): number {
  if (!/^\d+$/.test(value.trim()) || Number(value) < 1) throw new InvalidArgumentError("--seeds must be a whole number of at least 1.");
  return Number(value);
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
