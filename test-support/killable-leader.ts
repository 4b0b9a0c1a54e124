import { spawn } from "node:child_process";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { writeFileAtomic } from "../core/atomic-file.ts";
import type { LaunchMarker } from "../hosts/port/run-progress.ts";
import { localHostWorkdir } from "../cli/research/hosts-option.ts";
import { a3rEntry } from "./run-cli.ts";

/**
 * Runs `a3r research` or `a3r resume` as a child process, as a person would, and SIGKILLs
 * it the moment a trigger fires: a line it writes on stderr (`leader: <node> (stage n)`,
 * a run's change line) or a fact in its campaign folder (an event, a launch record, a
 * first metric). The runs it launched are separate sessions and outlive it.
 *
 * A trigger names nodes by name only and counts their lines, so a graph that gains nodes
 * (approve, smoke ...) keeps every trigger meaning the same point; a trigger whose node
 * disappears never fires, and the kill point then reports that the leader ended first.
 */
export interface TriggerContext {
  runsDir: string;
  campaignId: string;
}

export interface Trigger {
  /** In words, for test names and failure messages. */
  describe: string;
  /** Checked on every complete stderr line, with every line before it. */
  onLine?: (line: string, earlier: readonly string[]) => boolean;
  /** Polled every few milliseconds while the leader runs. */
  poll?: (context: TriggerContext) => Promise<boolean>;
}

const leaderLinePattern = /^leader: ([\w-]+)(?: \(stage (\d+)\))?$/;

/** The `occurrence`-th `leader: <node>` line (of that stage, when given). */
export function onLeaderLine(node: string, occurrence = 1, stage?: number): Trigger {
  const matches = (line: string) => {
    const match = leaderLinePattern.exec(line.trim());
    return match !== null && match[1] === node && (stage === undefined || Number(match[2]) === stage);
  };
  return {
    describe: `leader line "${node}"${stage === undefined ? "" : ` (stage ${stage})`} #${occurrence}`,
    onLine: (line, earlier) => matches(line) && earlier.filter(matches).length === occurrence - 1,
  };
}

/** The first stderr line matching `pattern` (a run's change line, e.g. /s1-a-seed1: succeeded/). */
export function onStderrLine(pattern: RegExp): Trigger {
  return { describe: `stderr line ${String(pattern)}`, onLine: (line) => pattern.test(line) };
}

/** When events.jsonl holds `count` events of `kind` (lines read whole; a torn one is skipped). */
export function onEvent(kind: string, count = 1, where: (event: Record<string, unknown>) => boolean = () => true): Trigger {
  return {
    describe: `${count} × event ${kind} in events.jsonl`,
    poll: async ({ runsDir, campaignId }) =>
      (await readEventsLoosely(join(runsDir, campaignId, "events.jsonl"))).filter((event) => event.kind === kind && where(event)).length >= count,
  };
}

/** When `count` runs of the campaign were started on the local host (their launch.json holds a pgid). */
export function onLaunchRecords(count: number): Trigger {
  return {
    describe: `${count} run(s) started on the host`,
    poll: async (context) => Object.values(await launchMarkers(context)).filter((pgid) => pgid !== null).length >= count,
  };
}

/** When the result directory of `blueprintId` has its first metrics line. */
export function onFirstMetric(blueprintId: string): Trigger {
  return {
    describe: `first metric of ${blueprintId}`,
    poll: async ({ runsDir, campaignId }) =>
      (await readFile(join(runsDir, campaignId, "results", blueprintId, "metrics.jsonl"), "utf8").catch(() => "")).includes("\n"),
  };
}

/** Blueprint ids with a launch record on this machine's host (a3r research's default host). */
export async function launchRecordIds(context: TriggerContext): Promise<string[]> {
  return Object.keys(await launchMarkers(context)).sort();
}

/** Each launch record of the campaign on the local host: blueprint id → its pgid (null until the worker started). */
export async function launchMarkers({ runsDir, campaignId }: TriggerContext): Promise<Record<string, number | null>> {
  const folder = join(localHostWorkdir(runsDir), campaignId);
  const markers: Record<string, number | null> = {};
  for (const id of await readdir(folder).catch(() => [] as string[])) {
    const text = await readFile(join(folder, id, "launch.json"), "utf8").catch(() => undefined);
    if (text === undefined) continue;
    try {
      const pgid = (JSON.parse(text) as { pgid?: unknown }).pgid;
      markers[id] = typeof pgid === "number" ? pgid : null;
    } catch {
      markers[id] = null; // being rewritten with its pgid
    }
  }
  return markers;
}

export interface LeaderRun {
  /** Whether the trigger fired and the leader was SIGKILLed (false: it ended on its own first). */
  killed: boolean;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The campaign's launch records at the moment of the kill: blueprint id → pgid (null: not started yet). */
  launchedAtKill: Record<string, number | null>;
}

/**
 * Starts `node bin/a3r.js ...args` and kills it with SIGKILL when `trigger` fires. Resolves
 * once the process has exited; rejects only when it runs past `timeoutMs` (then killed).
 */
export async function runLeaderUntil(
  args: string[],
  trigger: Trigger,
  context: TriggerContext,
  options: { timeoutMs?: number; pollMs?: number } = {},
): Promise<LeaderRun> {
  const child = spawn(process.execPath, [a3rEntry, ...args], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
  let stdout = "";
  let stderr = "";
  let partial = "";
  const lines: string[] = [];
  let killed = false;
  let exited = false;
  let launchedAtKill: Record<string, number | null> = {};
  let snapshot: Promise<void> = Promise.resolve();
  const kill = (): void => {
    if (killed || exited) return;
    killed = true;
    child.kill("SIGKILL");
    snapshot = launchMarkers(context).then((markers) => {
      launchedAtKill = markers;
    });
  };
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    const text = chunk.toString();
    stderr += text;
    partial += text;
    const complete = partial.split("\n");
    partial = complete.pop()!;
    for (const line of complete) {
      if (!killed && trigger.onLine?.(line, lines)) kill();
      lines.push(line);
    }
  });
  const poller = trigger.poll
    ? setInterval(() => {
        if (killed || exited) return;
        void trigger.poll!(context).then(
          (fire) => {
            if (fire) kill();
          },
          () => undefined,
        );
      }, options.pollMs ?? 5)
    : undefined;
  const timeout = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 120_000);
  const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveExit) => {
    child.once("exit", (exitCode, exitSignal) => {
      exited = true;
      resolveExit({ code: exitCode, signal: exitSignal });
    });
  });
  clearTimeout(timeout);
  if (poller) clearInterval(poller);
  await snapshot;
  if (!killed && signal === "SIGKILL") throw new Error(`a3r ${args.join(" ")} ran past ${options.timeoutMs ?? 120_000} ms and was killed; stderr:\n${stderr}`);
  return { killed, exitCode: code, signal, stdout, stderr, launchedAtKill };
}

/** The first `leader: <node>` line of a leader's stderr: where a resumed leader started. */
export function firstLeaderNode(stderr: string): string | null {
  for (const line of stderr.split("\n")) {
    const match = leaderLinePattern.exec(line.trim());
    if (match) return match[2] === undefined ? match[1]! : `${match[1]} (stage ${match[2]})`;
  }
  return null;
}

async function readEventsLoosely(path: string): Promise<Record<string, unknown>[]> {
  const text = await readFile(path, "utf8").catch(() => "");
  const events: Record<string, unknown>[] = [];
  for (const line of text.split("\n")) {
    try {
      events.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // The last line may be half written while the leader appends it.
    }
  }
  return events;
}

/**
 * Leaves the local host as a SIGKILL of the launching leader leaves it in the instant
 * after the launcher claimed `blueprintId` (launch.json created exclusively, no pgid yet)
 * and before it started the worker: hosts/local/local-launcher.ts writes the claim first, then
 * copies the blueprint and spawns. The gap is a millisecond, too short to hit reliably
 * from outside; call this on a leader killed before it launched anything. Returns why the
 * state could not be made (a claim already there), or null.
 */
export async function writeUnstartedClaim(context: TriggerContext, blueprintId: string): Promise<string | null> {
  const folder = join(localHostWorkdir(context.runsDir), context.campaignId, blueprintId);
  const marker: LaunchMarker = {
    campaign: context.campaignId,
    blueprintId,
    host: "here",
    resultDir: join(context.runsDir, context.campaignId, "results", blueprintId),
    gpuIndices: [],
    pgid: null,
    launchedAt: new Date().toISOString(),
  };
  await mkdir(folder, { recursive: true });
  try {
    await writeFile(join(folder, "launch.json"), `${JSON.stringify(marker)}\n`, { flag: "wx" });
    return null;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return `${blueprintId} was already claimed when the leader died`;
    throw error;
  }
}

/**
 * Leaves the campaign as a SIGKILL leaves it in the instant after a run was launched and
 * before the dispatcher appended its `run.dispatched` event (hosts/dispatch/dispatcher.ts does the
 * one right after the other): that event is taken out of events.jsonl again. Call it on
 * a leader killed after the launch. Returns why the state could not be made, or null.
 */
export async function forgetDispatchEvent({ runsDir, campaignId }: TriggerContext, blueprintId: string): Promise<string | null> {
  const file = join(runsDir, campaignId, "events.jsonl");
  const lines = (await readFile(file, "utf8")).split("\n");
  const isDispatch = (line: string) => {
    try {
      const event = JSON.parse(line) as Record<string, unknown>;
      return event.kind === "run.dispatched" && event.blueprintId === blueprintId;
    } catch {
      return false;
    }
  };
  if (!lines.some(isDispatch)) return `events.jsonl has no run.dispatched event of ${blueprintId}: it was not launched before the kill`;
  await writeFileAtomic(file, lines.filter((line) => !isDispatch(line)).join("\n"));
  return null;
}

/**
 * Leaves leader.sqlite as a SIGKILL leaves it in the instant between a node's saved
 * writes and the checkpoint after them (durability "sync" saves them one after the
 * other; the gap is too short to hit from outside): the newest checkpoint is removed, so
 * the one before it, with its finished node's writes pending, is the newest again.
 * Call it on a leader killed as a node started. Returns why the state could not be made
 * (no writes pending after the roll-back), or null.
 */
export async function rollBackNewestCheckpoint({ runsDir, campaignId }: TriggerContext): Promise<string | null> {
  const { SqliteSaver } = await import("@langchain/langgraph-checkpoint-sqlite");
  const saver = SqliteSaver.fromConnString(join(runsDir, campaignId, "leader.sqlite"));
  try {
    const newestOf = () =>
      saver.db
        .prepare("SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1")
        .get(campaignId) as { checkpoint_id: string } | undefined;
    const newest = newestOf();
    if (!newest) throw new Error(`campaign ${campaignId} has no checkpoint to roll back`);
    saver.db.prepare("DELETE FROM writes WHERE thread_id = ? AND checkpoint_id = ?").run(campaignId, newest.checkpoint_id);
    saver.db.prepare("DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?").run(campaignId, newest.checkpoint_id);
    const previous = newestOf();
    const pending = previous
      ? (
          saver.db.prepare("SELECT COUNT(*) AS count FROM writes WHERE thread_id = ? AND checkpoint_id = ?").get(campaignId, previous.checkpoint_id) as {
            count: number;
          }
        ).count
      : 0;
    return pending > 0 ? null : "no writes are pending after the roll-back";
  } finally {
    saver.db.close();
  }
}
