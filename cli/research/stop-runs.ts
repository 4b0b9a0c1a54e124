import { readFile } from "node:fs/promises";
import { appendEvent, loadCampaign, readEvents } from "../../campaign/index.ts";
import { A3rError } from "../../core/errors.ts";
import { closeDispatchHosts, type DispatchHost } from "../../hosts/index.ts";
import { parseTopic } from "../../leader/index.ts";
import { localDispatchHost, openDispatchHostsFile } from "./hosts-option.ts";
import { leaderMarkFile } from "./leader-mark.ts";

/**
 * `a3r stop CAMPAIGN` and `a3r stop CAMPAIGN/BLUEPRINT`: live runs are stopped through
 * their host, which signals the worker (TERM, then KILL after the grace), so the worker
 * writes the final state (cancelled) and a complete result directory. Stopping a whole
 * campaign stops its leader first, so it cannot react to the runs ending by planning on.
 * Each stop is on record (`run.stopped`, `campaign.stopped`); `a3r resume` runs those
 * runs again on hosts that can set a finished run aside (local, ssh).
 */
export interface StopOutcome {
  blueprintId: string;
  host: string;
  /** What happened: stopped, or why nothing was done. */
  result: "stopped" | "already finished" | "not running";
}

export async function stopCampaignRuns(
  runsDir: string,
  target: string,
  options: { waitMs?: number } = {},
): Promise<{ leaderStopped: boolean; runs: StopOutcome[] }> {
  const slash = target.indexOf("/");
  const campaignId = slash === -1 ? target : target.slice(0, slash);
  const onlyRun = slash === -1 ? undefined : target.slice(slash + 1);
  const campaign = await loadCampaign(runsDir, campaignId);
  const launched = new Map<string, string>();
  for (const event of (await readEvents(campaign.paths.events)).events) {
    if (event.kind === "run.dispatched" && typeof event.blueprintId === "string" && typeof event.host === "string") launched.set(event.blueprintId, event.host);
  }
  if (onlyRun !== undefined && !launched.has(onlyRun)) {
    throw new A3rError("RUN_NOT_FOUND", `campaign ${campaignId} never launched ${onlyRun}`, {
      where: target,
      hint: `see its runs with: a3r status ${campaignId}`,
    });
  }
  const leaderStopped = onlyRun === undefined ? await stopLeader(runsDir, campaignId) : false;
  const topic = parseTopic(campaign.topic, { file: campaign.paths.topic });
  const hosts: DispatchHost[] = topic.hostsFile === undefined ? [localDispatchHost(runsDir)] : (await openDispatchHostsFile(topic.hostsFile)).hosts;
  const runs: StopOutcome[] = [];
  try {
    for (const [blueprintId, hostName] of launched) {
      if (onlyRun !== undefined && blueprintId !== onlyRun) continue;
      const host = hosts.find((candidate) => candidate.config.name === hostName);
      const ref = { campaign: campaignId, blueprintId };
      if (!host)
        throw new A3rError("HOST_UNREACHABLE", `${blueprintId} runs on ${hostName}, which the campaign's hosts no longer name`, {
          where: campaign.paths.topic,
          hint: "put the host back into the hosts file, then stop again",
        });
      const progress = await host.launcher.poll(ref);
      if (progress.finished) {
        runs.push({ blueprintId, host: hostName, result: "already finished" });
        continue;
      }
      if (!(await host.launcher.cancel(ref))) {
        runs.push({ blueprintId, host: hostName, result: "not running" });
        continue;
      }
      await appendEvent(campaign.paths.events, "run.stopped", { blueprintId, host: hostName, by: "a3r stop" });
      await waitFinished(host, ref, options.waitMs ?? 30_000);
      await host.launcher.fetch(ref, `${campaign.paths.results}/${blueprintId}`);
      runs.push({ blueprintId, host: hostName, result: "stopped" });
    }
  } finally {
    await closeDispatchHosts(hosts);
  }
  if (onlyRun === undefined)
    await appendEvent(campaign.paths.events, "campaign.stopped", {
      by: "a3r stop",
      runs: runs.filter((run) => run.result === "stopped").map((run) => run.blueprintId),
    });
  return { leaderStopped, runs };
}

/** TERM to the campaign's leader on this machine, KILL if it is still there 10 s later. */
async function stopLeader(runsDir: string, campaignId: string): Promise<boolean> {
  let pid: number;
  try {
    pid = (JSON.parse(await readFile(leaderMarkFile(runsDir, campaignId), "utf8")) as { pid: number }).pid;
  } catch {
    return false;
  }
  const alive = (): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (!Number.isInteger(pid) || pid <= 0 || !alive()) return false;
  process.kill(pid, "SIGTERM");
  for (let waited = 0; alive() && waited < 10_000; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
  if (alive()) process.kill(pid, "SIGKILL");
  return true;
}

async function waitFinished(host: DispatchHost, ref: { campaign: string; blueprintId: string }, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    const progress = await host.launcher.poll(ref);
    if (progress.finished || progress.state === "lost") return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
