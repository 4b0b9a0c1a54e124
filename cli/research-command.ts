import { InvalidArgumentError, type Command } from "commander";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createCampaign, loadCampaign, slugifyCampaignId } from "../campaign/index.ts";
import { A3rError } from "../core/errors.ts";
import { redactSecrets } from "../core/redact.ts";
import type { DispatchHost, DispatchRow } from "../hosts/index.ts";
import { localDispatchHost, openDispatchHostsFile } from "./research/hosts-option.ts";
import { closeDispatchHosts } from "../hosts/index.ts";
import { markLeaderRunning } from "./research/leader-mark.ts";
import { createLiveView, maxStepsFromOverrides } from "./views/live-view.ts";
import { watchStatus } from "./views/status-watch.ts";
import {
  describeCampaign,
  describeWaiting,
  listCampaignSummaries,
  renderCampaignDetail,
  renderCampaignTable,
  summarizeCampaign,
} from "./research/campaign-status.ts";
import { adjustTopicText, campaignIdFor, demoCampaignId, hasFrontMatter, liftTopicSecrets, missingSecretReferences } from "./research/topic-option.ts";
import {
  choosePlanner,
  describeList,
  plannerFlags,
  plannerKinds,
  plannerTopicNeeds,
  rewriteCampaignReport,
  runLeader,
  loadTopic,
  parseTopic,
  setLeaderCheckpointAside,
  topicTextWithAbsolutePaths,
  type LeaderRun,
  type PlannerFlag,
  type ReviewAnswer,
} from "../leader/index.ts";
import { plannerChoiceFacts, plannerOfCampaign } from "./research/planner-option.ts";
import { collect, draftFromFile, type DraftFlags } from "./research/draft-from-file.ts";
import { stopCampaignRuns } from "./research/stop-runs.ts";
import { campaignTopic, engineSchemas } from "./research/campaign-topic.ts";
import { exitCode } from "./exit-codes.ts";

/**
 * `a3r research`, `a3r resume`, `a3r stop`, `a3r status`, `a3r report` and `a3r demo`: thin
 * wrappers around the leader (leader/graph/leader-graph.ts). Progress goes to stderr, as a
 * live table on a terminal and as plain lines otherwise (cli/views/live-view.ts); stdout
 * holds the answer (the report path, or JSON with --json).
 *
 * Besides a topic file, `research` takes a question with `--base` (a topic drafted from a
 * blueprint or config, cli/research/draft-from-file.ts) and `--planner heuristic|llm|auto`;
 * `--review` pauses after each plan and each stage's blueprints for `resume --approve` or
 * `resume --instruct`; `resume --reopen` goes on after a raised budget and `--rebuild` from a
 * fresh checkpoint; `status --watch` refreshes until the campaign ends.
 */
const demoTopic = fileURLToPath(new URL("../examples/topics/embedded-lr.md", import.meta.url));

function positiveInteger(name: string) {
  return (value: string): number => {
    if (!/^\d+$/.test(value.trim()) || Number(value) < 1) throw new InvalidArgumentError(`${name} must be a whole number of at least 1.`);
    return Number(value);
  };
}

interface ResearchFlags {
  campaign?: string;
  runsDir: string;
  hosts?: string;
  planner: PlannerFlag;
  maxStages?: number;
  maxExperiments?: number;
  review?: boolean;
  json?: boolean;
  base?: string;
}

type ResearchCommandFlags = ResearchFlags & DraftFlags;

export function registerResearchCommands(program: Command): void {
  registerResearch(program);
  registerResume(program);
  registerStop(program);
  registerStatus(program);
  registerReport(program);
  registerDemo(program);
}

function registerResearch(program: Command): void {
  program
    .command("research")
    .description("run a research campaign from a topic file to report.md (heuristic planner; this machine unless --hosts)")
    .argument("<topic>", 'topic markdown file, or a question in quotes with --base ("Which lr learns fastest?" --base blueprint.md --knob lr=0.1,0.2)')
    .option("--campaign <id>", "campaign id (default: from the topic's title)")
    .option("--runs-dir <dir>", "data folder holding the campaigns", "runs")
    .option("--hosts <file>", "hosts.yaml (default: the topic's hosts, else this machine, 2 runs at a time, no GPU)")
    .option("--planner <name>", plannerHelp(), plannerOption, "auto")
    .option("--max-stages <n>", "stage budget (overrides the topic's)", positiveInteger("--max-stages"))
    .option("--max-experiments <n>", "experiment budget (overrides the topic's)", positiveInteger("--max-experiments"))
    .option("--review", "pause for a person after each plan and each stage's blueprints (a3r resume --approve | --instruct)")
    .option("--json", "print the final summary as JSON")
    .option("--base <file>", "with a question instead of a topic file: the blueprint or config the base experiment comes from")
    .option("--knob <key=v1,v2>", "with --base: a config key to vary and its values (repeatable; default: proposed)", collect)
    .option("--metric <name[:goal]>", "with --base: the metric (default: the blueprint's)")
    .option("--command <text>", "with --base: the base command (needed for a config alone)")
    .option("--seeds <n>", "with --base: seeds per configuration (default 3)", positiveInteger("--seeds"))
    .option("--max-steps <n>", "with --base: training steps per run (default: the base's max_steps)", positiveInteger("--max-steps"))
    .action(async (topicArgument: string, flags: ResearchCommandFlags) => {
      const topicFile = flags.base === undefined ? topicArgument : await draftedTopicFile(topicArgument, flags);
      await research(topicFile, flags);
    });
}

function registerResume(program: Command): void {
  program
    .command("resume")
    .description("continue a campaign where its leader stopped (a finished one just prints its report)")
    .argument("<campaign>", "campaign id")
    .option("--runs-dir <dir>", "data folder holding the campaigns", "runs")
    .option("--approve", "approve what a paused campaign waits for (a plan or a stage's blueprints)")
    .option("--instruct <text>", "send a paused campaign back to planning with this instruction (it is recorded)")
    .option("--reopen", "go on with a campaign that stopped on a budget, after raising that budget in its topic.md")
    .option("--rebuild", "set an unreadable leader.sqlite aside and replay the campaign into a fresh one (nothing finished is run again)")
    .option("--json", "print the final summary as JSON")
    .action(
      async (campaignId: string, flags: { runsDir: string; json?: boolean; approve?: boolean; instruct?: string; reopen?: boolean; rebuild?: boolean }) => {
        const runsDir = resolve(flags.runsDir);
        await loadCampaign(runsDir, campaignId);
        if (flags.rebuild && (flags.reopen || flags.approve || flags.instruct !== undefined))
          throw new A3rError("USAGE", "--rebuild replays the campaign as it is: give it alone", {
            where: "--rebuild",
            hint: `run a3r resume ${campaignId} --rebuild first, then answer or reopen`,
          });
        if (flags.rebuild) {
          const aside = await setLeaderCheckpointAside(runsDir, campaignId);
          process.stderr.write(aside === null ? "rebuild: no leader.sqlite to set aside\n" : `rebuild: the old checkpoint is now ${aside}\n`);
        }
        if (flags.approve && flags.instruct !== undefined)
          throw new A3rError("USAGE", "give either --approve or --instruct, not both", {
            where: "--approve/--instruct",
            hint: "approve as it is, or instruct a change",
          });
        if (flags.reopen && (flags.approve || flags.instruct !== undefined))
          throw new A3rError("USAGE", "--reopen is for a finished campaign, --approve and --instruct for a paused one", {
            where: "--reopen",
            hint: "give one of them",
          });
        if (flags.instruct !== undefined && flags.instruct.trim() === "")
          throw new A3rError("USAGE", "--instruct needs the instruction text", {
            where: "--instruct",
            hint: 'for example: --instruct "use 3 seeds per configuration"',
          });
        const answer: ReviewAnswer | undefined = flags.approve
          ? { action: "approve" }
          : flags.instruct !== undefined
            ? { action: "instruct", text: flags.instruct.trim() }
            : undefined;
        await lead(runsDir, campaignId, { json: flags.json, answer, reopen: flags.reopen === true, runsDirFlag: runsDirFlag(flags.runsDir) });
      },
    );
}

function registerStop(program: Command): void {
  program
    .command("stop")
    .description("stop a campaign (its leader and every live run) or one run (CAMPAIGN/BLUEPRINT), cleanly through the workers; a3r resume runs them again")
    .argument("<target>", "campaign id, or campaign id/blueprint id")
    .option("--runs-dir <dir>", "data folder holding the campaigns", "runs")
    .option("--json", "print what was stopped as JSON")
    .action(async (target: string, flags: { runsDir: string; json?: boolean }) => {
      const outcome = await stopCampaignRuns(resolve(flags.runsDir), target);
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(outcome, null, 2)}\n`);
        return;
      }
      if (outcome.leaderStopped) process.stdout.write("leader: stopped\n");
      for (const run of outcome.runs) process.stdout.write(`${run.blueprintId} on ${run.host}: ${run.result}\n`);
      if (!target.includes("/")) process.stdout.write(`to go on: a3r resume ${target}${runsDirFlag(flags.runsDir)}\n`);
    });
}

function registerStatus(program: Command): void {
  program
    .command("status")
    .description("the campaigns and their state; with a campaign, its experiments per stage")
    .argument("[campaign]", "campaign id")
    .option("--runs-dir <dir>", "data folder holding the campaigns", "runs")
    .option("--json", "print JSON instead of tables")
    .option("--watch", "refresh the view every 2 s until the campaign finishes (Ctrl-C to stop watching)")
    .action(async (campaignId: string | undefined, flags: { runsDir: string; json?: boolean; watch?: boolean }) => {
      const runsDir = resolve(flags.runsDir);
      if (flags.watch) {
        if (flags.json)
          throw new A3rError("USAGE", "--watch and --json do not go together", {
            where: "--watch",
            hint: "poll a3r status --json yourself, or watch the tables",
          });
        await watchCampaigns(runsDir, campaignId);
        return;
      }
      if (campaignId === undefined) {
        const summaries = await listCampaignSummaries(runsDir);
        process.stdout.write(flags.json ? `${JSON.stringify(summaries, null, 2)}\n` : `${renderCampaignTable(summaries)}\n`);
        return;
      }
      const detail = await describeCampaign(runsDir, campaignId);
      process.stdout.write(flags.json ? `${JSON.stringify(detail, null, 2)}\n` : `${renderCampaignDetail(detail)}\n`);
    });
}

function registerReport(program: Command): void {
  program
    .command("report")
    .description("write report.md and report.html of a campaign again from its files (no model call, nothing launched)")
    .argument("<campaign>", "campaign id")
    .option("--runs-dir <dir>", "data folder holding the campaigns", "runs")
    .action(async (campaignId: string, flags: { runsDir: string }) => {
      const runsDir = resolve(flags.runsDir);
      const campaign = await loadCampaign(runsDir, campaignId);
      await rewriteCampaignReport(campaign.paths, await campaignTopic(campaign));
      process.stdout.write(`report: ${campaign.paths.report}\nreport: ${campaign.paths.reportHtml}\n`);
    });
}

function registerDemo(program: Command): void {
  program
    .command("demo")
    .description("the example campaign: which learning rate trains the embedded swarm policy fastest (this machine, a few minutes)")
    .option("--campaign <id>", "campaign id (default: demo-<time>)")
    .option("--runs-dir <dir>", "data folder holding the campaigns", "runs")
    .option("--json", "print the final summary as JSON")
    .action(async (flags: { campaign?: string; runsDir: string; json?: boolean }) => {
      const runsDir = resolve(flags.runsDir);
      const campaignId = flags.campaign ?? demoCampaignId(new Date());
      // The example names its paths relative to its own file; the campaign's copy gets them
      // absolute, so a resumed demo needs nothing special. It runs here, never on the
      // example hosts file.
      const text = adjustTopicText(topicTextWithAbsolutePaths(await readFile(demoTopic, "utf8"), demoTopic), { hostsFile: null });
      parseTopic(text, { file: demoTopic });
      await createCampaign(runsDir, campaignId, text, plannerChoiceFacts("heuristic", process.env));
      process.stderr.write(`demo campaign ${campaignId} in ${runsDir}\n`);
      await lead(runsDir, campaignId, { json: flags.json, runsDirFlag: runsDirFlag(flags.runsDir) });
    });
}

/** `a3r status --watch`: the same tables, redrawn until the campaign finishes or Ctrl-C. */
async function watchCampaigns(runsDir: string, campaignId: string | undefined): Promise<void> {
  const stop = new AbortController();
  const onInterrupt = (): void => stop.abort();
  process.once("SIGINT", onInterrupt);
  try {
    await watchStatus({
      stream: process.stdout,
      tty: process.stdout.isTTY === true,
      intervalMs: 2000,
      signal: stop.signal,
      render: async () => {
        if (campaignId === undefined) return { text: renderCampaignTable(await listCampaignSummaries(runsDir)), done: false };
        const detail = await describeCampaign(runsDir, campaignId);
        return { text: renderCampaignDetail(detail), done: detail.state === "finished" };
      },
    });
  } finally {
    process.removeListener("SIGINT", onInterrupt);
  }
}

/** `--planner`: a registered planner's name or auto (leader/planners/registry.ts). */
function plannerOption(value: string): PlannerFlag {
  if (plannerFlags().includes(value)) return value;
  throw new InvalidArgumentError(`--planner must be ${describeList(plannerFlags())}.`);
}

/** "heuristic, llm (a language model; see README), or auto (llm when a model is configured)". */
function plannerHelp(): string {
  const named = plannerKinds().map((kind) => (kind.description === kind.name ? kind.name : `${kind.name} (${kind.description})`));
  const best = [...plannerKinds()].filter((kind) => kind.autoRank !== undefined).sort((left, right) => right.autoRank! - left.autoRank!)[0];
  const auto = best?.readyWhen ? `auto (${best.name} when ${best.readyWhen})` : "auto";
  return `${named.join(", ")}, or ${auto}`;
}

/**
 * `a3r research "question" --base FILE`: the topic is drafted (as `a3r topic new` would)
 * into the runs folder, where the campaign's record can point at it, and run from there.
 */
async function draftedTopicFile(question: string, flags: ResearchCommandFlags): Promise<string> {
  const folder = join(resolve(flags.runsDir), ".topics");
  await mkdir(folder, { recursive: true });
  const file = join(folder, `${slugifyCampaignId(question).slice(0, 48).replace(/-+$/, "") || "topic"}.md`);
  const draft = await draftFromFile(flags.base!, question, file, flags);
  // The draft is a3r's file too: the base command's secrets become references here already.
  const lifted = liftTopicSecrets(draft.text);
  await writeFile(file, lifted.text);
  passLiftedSecrets(lifted.secrets, file);
  for (const line of draft.assumptions) process.stderr.write(`assumed ${line}\n`);
  process.stderr.write(`topic: ${file}\n`);
  return file;
}

/** Stops that leave the question unanswered: the smoke test or a stage failed, or the audit refused the blueprints. */
const unansweredStops: ReadonlySet<string> = new Set(["stage-failed", "audit-failed"]);

async function research(topicFile: string, flags: ResearchFlags): Promise<void> {
  const file = resolve(topicFile);
  const { topic, text } = await loadTopic(file);
  // Says which planner and why first, and refuses `--planner llm` without a model before anything is created.
  const chosen = choosePlanner(flags.planner, process.env);
  process.stderr.write(`${chosen.line}\n`);
  // A topic the chosen planner cannot plan is refused before a campaign exists for it.
  const needs = plannerTopicNeeds(chosen.planner, topic);
  if (needs.length > 0) {
    throw new A3rError(
      "TOPIC_INVALID",
      `${file}: the ${chosen.planner} planner cannot plan this topic yet:\n${needs.map((need) => `  - ${need}`).join("\n")}`,
      {
        where: file,
        hint: "add those lines to the topic's front matter, or draft one with: a3r topic new --from <blueprint or swarm.yaml>",
      },
    );
  }
  const runsDir = resolve(flags.runsDir);
  // The id is a folder name in every path a3r prints: made from the title without its secrets.
  const campaignId = flags.campaign ?? campaignIdFor({ ...topic, title: redactSecrets(topic.title) }, file);
  const hostsFile = flags.hosts === undefined ? topic.hostsFile : resolve(flags.hosts);
  if (!hasFrontMatter(text) && (flags.maxStages !== undefined || flags.maxExperiments !== undefined || flags.hosts !== undefined || flags.review)) {
    process.stderr.write("warning: the topic has no front matter; --max-stages, --max-experiments, --hosts and --review are ignored\n");
  }
  // The campaign keeps its own copy of the topic: relative paths would break there, and
  // the budgets given here must hold again on resume.
  const adjusted = adjustTopicText(topicTextWithAbsolutePaths(text, file), {
    stages: flags.maxStages,
    experiments: flags.maxExperiments,
    hostsFile,
    ...(flags.review ? { review: true } : {}),
  });
  parseTopic(adjusted, { file });
  // The copy holds no secret value: the command's are references this leader's workers get from its environment.
  const lifted = liftTopicSecrets(adjusted);
  parseTopic(lifted.text, { file });
  try {
    await createCampaign(runsDir, campaignId, lifted.text, plannerChoiceFacts(flags.planner, process.env));
  } catch (error) {
    if (error instanceof A3rError && error.code === "CAMPAIGN_EXISTS") {
      throw new A3rError("CAMPAIGN_EXISTS", error.message, {
        where: error.where,
        hint: `continue it with: a3r resume ${campaignId} --runs-dir ${flags.runsDir}; or start a new one with --campaign <another id>`,
      });
    }
    throw error;
  }
  process.stderr.write(`campaign ${campaignId} in ${runsDir}\n`);
  passLiftedSecrets(lifted.secrets, join(runsDir, campaignId, "topic.md"));
  await lead(runsDir, campaignId, { json: flags.json, runsDirFlag: runsDirFlag(flags.runsDir) });
}

/**
 * The base command's literal secrets, lifted into references in the campaign's topic.md,
 * reach this leader's workers through its environment (a local host's workers inherit it);
 * a resume, or a host elsewhere, needs them set by the person. Names only are printed.
 */
function passLiftedSecrets(secrets: Record<string, string>, topicCopy: string): void {
  const names = Object.keys(secrets);
  if (names.length === 0) return;
  for (const [name, value] of Object.entries(secrets)) process.env[name] = value;
  process.stderr.write(
    `secrets: the topic's command held ${names.length} literal secret(s); ${topicCopy} and every blueprint keep them as ${names.map((name) => `\${${name}}`).join(", ")}, ` +
      `passed to this machine's workers through the environment. Before a3r resume, or for hosts elsewhere, set ${names.join(", ")} where the workers run.\n`,
  );
}

/** A topic whose command names secrets this environment lacks would run with empty values: refused. */
function assertSecretsSet(topic: ReturnType<typeof parseTopic>, topicFile: string): void {
  const missing = missingSecretReferences(topic);
  if (missing.length === 0) return;
  throw new A3rError("CONFIG_INVALID", `the campaign's command needs ${missing.join(", ")}, which this environment does not set`, {
    where: topicFile,
    hint: `export ${missing.map((name) => `${name}=...`).join(" ")} (the values the command held when the campaign was created), then run the command again`,
  });
}

/** A campaign that waits for review or has its report: a plain resume only shows it. */
async function isPausedOrFinished(runsDir: string, campaignId: string): Promise<boolean> {
  const { state } = await summarizeCampaign(runsDir, campaignId);
  return state === "finished" || state === "waiting";
}

/** ` --runs-dir X` for the commands printed to the person, empty for the default. */
function runsDirFlag(flag: string): string {
  return flag === "runs" ? "" : ` --runs-dir ${flag}`;
}

/** Runs (or resumes) the campaign's leader with this machine's hosts, and prints where the report is. */
async function lead(
  runsDir: string,
  campaignId: string,
  options: { json?: boolean; answer?: ReviewAnswer; reopen?: boolean; runsDirFlag?: string },
): Promise<void> {
  const campaign = await loadCampaign(runsDir, campaignId);
  const topic = parseTopic(campaign.topic, { file: campaign.paths.topic });
  // A finished campaign (not re-opened) or a paused one (not answered) is only shown: nothing launches that needs the secrets.
  const { state } = await summarizeCampaign(runsDir, campaignId);
  const showsOnly = (state === "finished" && !options.reopen) || (state === "waiting" && options.answer === undefined);
  if (!showsOnly) assertSecretsSet(topic, campaign.paths.topic);
  let hosts: DispatchHost[];
  if (topic.hostsFile === undefined) {
    hosts = [localDispatchHost(runsDir)];
    process.stderr.write("hosts: this machine (2 runs at a time, no GPU)\n");
  } else {
    const opened = await openDispatchHostsFile(topic.hostsFile);
    for (const problem of opened.problems) process.stderr.write(`warning: host left out: ${problem}\n`);
    hosts = opened.hosts;
    process.stderr.write(`hosts: ${hosts.map((host) => host.config.name).join(", ")} (${topic.hostsFile})\n`);
  }
  const unmark = await markLeaderRunning(runsDir, campaignId);
  // A table redrawn in place on a terminal, plain change lines otherwise (logs, CI).
  const view = createLiveView({
    stream: process.stderr,
    tty: process.stderr.isTTY === true,
    metric: topic.metric?.name ?? null,
    maxSteps: () => maxStepsFromOverrides(topic.base?.overrides),
  });
  let run: LeaderRun;
  try {
    run = await runLeader({
      runsDir,
      campaignId,
      ...(options.answer === undefined ? {} : { answer: options.answer }),
      ...(options.reopen ? { reopen: true } : {}),
      planner: await plannerOfCampaign(
        campaign.paths,
        topic,
        process.env,
        options.answer !== undefined || options.reopen === true || !(await isPausedOrFinished(runsDir, campaignId)),
      ),
      hosts,
      intervalMs: topic.leaderPollMs,
      // The swarm engine's config schema: the leader keeps refinement inside its bounds and audits overrides against it.
      engineSchemas,
      onNode: (node, state) => {
        const stage = state.stagePlan?.stage ?? state.pending?.stage;
        view.note(`leader: ${node}${stage === undefined ? "" : ` (stage ${stage})`}`);
      },
      onUpdate: (rows: DispatchRow[]) => view.update(rows),
    });
  } finally {
    view.close();
    await unmark();
    await closeDispatchHosts(hosts);
  }
  const final = run.state;
  const summary = {
    campaign: campaignId,
    stages: final.history.length,
    experiments: final.history.reduce((total, record) => total + record.outcomes.length, 0),
    stop: final.stop,
    report: final.reportFile,
    waitingFor: run.waitingFor,
  };
  // A campaign that stopped without answering its question is a failed command (exit 1), so a script or CI sees it.
  if (final.stop && unansweredStops.has(final.stop.reason)) process.exitCode = exitCode.failure;
  if (options.json) {
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    return;
  }
  if (run.waitingFor) {
    const waiting = { ...run.waitingFor, commands: run.waitingFor.commands ?? [] };
    process.stdout.write(`${describeWaiting(campaignId, waiting, options.runsDirFlag ?? "").join("\n")}\n`);
    return;
  }
  if (final.stop) process.stderr.write(`stopped: ${final.stop.reason} - ${final.stop.explanation}\n`);
  if (final.stop?.reason === "budget")
    process.stderr.write(`to go on: raise that budget in ${campaign.paths.topic}, then a3r resume ${campaignId}${options.runsDirFlag ?? ""} --reopen\n`);
  process.stdout.write(`report: ${final.reportFile ?? campaign.paths.report}\n`);
}
