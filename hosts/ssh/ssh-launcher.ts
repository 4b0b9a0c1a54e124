import { blueprintGraceMs, cancelWaitMs } from "../port/cancel-wait.ts";
import { mkdir } from "node:fs/promises";
import { blueprintTextForCopy } from "../../blueprints/index.ts";
import { join } from "node:path";
import type { SFTPWrapper } from "ssh2";
import { writeFileAtomic } from "../../core/atomic-file.ts";
import { A3rError } from "../../core/errors.ts";
import { assertCampaignId, assertSafeBlueprintId, type StopRequest } from "../../campaign/index.ts";
import { liveFiles, type FetchOutcome, type LaunchOutcome, type LaunchRequest, type Launcher, type RunProgress, type RunRef } from "../port/launcher.ts";
import { describeProgress, launchGraceMs, listMarkersScript, parseLaunchMarker, refsOfMarkerListing, type LaunchMarker } from "../port/run-progress.ts";
import { shellQuote } from "../../core/shell-quote.ts";
import { inlineEnvironment, workerRunCommand } from "../port/worker-command-line.ts";
import type { SshConnection } from "./ssh-connection.ts";
import { stopRequestAnswer, stopRequestScript } from "../port/stop-request-script.ts";

/**
 * Runs blueprints on a remote host over one shared ssh2 connection.
 *
 * Layout on the host: `<workdir>/<campaign>/<blueprint id>/` holds `.launched` (a folder:
 * mkdir is the atomic idempotency check), blueprint.md (uploaded over SFTP), launch.json,
 * pgid, worker.log and `result/` (the result directory the worker writes).
 *
 * The worker starts under `setsid -f` with stdin, stdout and stderr away from the channel,
 * so a dropped connection never stops it; polling reads files and probes the process
 * group, so after a reconnect it simply carries on.
 *
 * A launch cut off between the `.launched` claim and the start: past the launch grace, a
 * claim with no recorded group polls as no run and the next launch takes it over; one
 * whose worker recorded its group but not launch.json is `lost` (it may be running, so it
 * is never started twice). Left out: remote disk quotas.
 */
export interface SshLauncherOptions {
  host: string;
  workdir: string;
  a3r: string;
  connection: SshConnection;
  commandTimeoutMs?: number;
}

const sections = ["launch", "status", "finish", "metrics", "alive", "claimed", "workerlog"] as const;

/**
 * Prints, for the run folder in $d, the files a poll reads: the small ones through one
 * `tail -v` (its "==> file <==" headers separate them), then the metrics tail, then
 * whether the group lives. Two processes per run, the rest shell builtins, because a
 * poll cycle over hundreds of runs is one script and forks are its cost.
 */
const pollBody = [
  // Whether the group lives is asked before finish.flag is read: a run that ends in between
  // then reads as running once more, never as a dead group without its flag (lost).
  `echo @@alive; pg=; read pg < "$d/pgid" 2>/dev/null; if [ -z "$pg" ]; then echo unknown; elif kill -0 -- "-$pg" 2>/dev/null; then echo yes; else echo no; fi`,
  `tail -v -n +1 "$d/launch.json" "$d/result/status.json" "$d/result/finish.flag" 2>/dev/null`,
  `echo; echo @@metrics; tail -n 5 "$d/result/metrics.jsonl" 2>/dev/null`,
  `echo`,
  // Seconds since the launch claimed the run folder, and whether a worker ever recorded its
  // group: a claim without a start is launched again after the grace (see launch).
  `echo @@claimed; if [ ! -f "$d/launch.json" ] && [ -d "$d/.launched" ]; then echo $(( $(date +%s) - $(stat -c %Y "$d/.launched") )) $([ -s "$d/pgid" ] && echo started || echo never); fi`,
  // Only for a dead group: why it died, in the worker's own words (a launch that died at once).
  `echo @@workerlog; if [ -n "$pg" ] && ! kill -0 -- "-$pg" 2>/dev/null && [ ! -f "$d/result/finish.flag" ]; then tail -c 600 "$d/worker.log" 2>/dev/null; echo; fi`,
].join("; ");

export class SshLauncher implements Launcher {
  readonly kind = "ssh" as const;
  readonly host: string;
  private home: string | undefined;

  constructor(private readonly options: SshLauncherOptions) {
    this.host = options.host;
  }

  get connection(): SshConnection {
    return this.options.connection;
  }

  private async workdir(): Promise<string> {
    const { workdir } = this.options;
    if (!workdir.startsWith("~/")) return workdir;
    this.home ??= (await this.exec('printf %s "$HOME"', true)).stdout.trim();
    return `${this.home}/${workdir.slice(2)}`;
  }

  async runDir(ref: RunRef): Promise<string> {
    assertCampaignId(ref.campaign);
    assertSafeBlueprintId(ref.blueprintId);
    return `${await this.workdir()}/${ref.campaign}/${ref.blueprintId}`;
  }

  private async exec(command: string, idempotent: boolean, timeoutMs?: number) {
    const result = await this.options.connection.exec(command, { idempotent, timeoutMs: timeoutMs ?? this.options.commandTimeoutMs ?? 30_000 });
    return result;
  }

  async launch(request: LaunchRequest): Promise<LaunchOutcome> {
    const ref = { campaign: request.campaign, blueprintId: request.blueprintId };
    const runDir = await this.runDir(ref);
    const q = shellQuote(runDir);
    // mkdir is the atomic claim. A claim past the grace whose worker never recorded its group
    // (a launch cut off between claim and start) is set aside and claimed again: the run is
    // not lost. The takeover is judged and done under flock(1) on `.takeover.lock`, so two
    // launchers that both find the claim abandoned cannot each set aside the other's fresh
    // one; the kernel drops the lock with its holder, so none is ever left behind. (A host
    // without flock takes over unlocked.)
    const graceSeconds = Math.ceil(launchGraceMs / 1000);
    const age = (path: string) => `$(( $(date +%s) - $(stat -c %Y ${path} 2>/dev/null || date +%s) ))`;
    const abandoned = `[ ! -f ${q}/launch.json ] && [ ! -s ${q}/pgid ] && [ ${age(`${q}/.launched`)} -gt ${graceSeconds} ]`;
    // With `revive`: a claim whose worker group is dead and whose run has no finish.flag is
    // set aside whole (claim, group id, marker) so a new worker re-attaches to the result.
    const workerGone = `pg=; read pg < ${q}/pgid 2>/dev/null; [ -n "$pg" ] && ! kill -0 -- "-$pg" 2>/dev/null && [ ! -f ${q}/result/finish.flag ]`;
    const setAsideGone = `s=$(date +%s%N); mv ${q}/.launched ${q}/.launched.worker-gone-$s && mv ${q}/pgid ${q}/pgid.worker-gone-$s && { mv ${q}/launch.json ${q}/launch.worker-gone-$s.json 2>/dev/null; true; }`;
    const revive = request.revive === true ? ` elif ${workerGone}; then ${setAsideGone} && mkdir ${q}/.launched 2>/dev/null;` : "";
    const takeOver = `( if command -v flock >/dev/null 2>&1; then flock -w 10 9 || exit 1; fi; if ${abandoned}; then mv ${q}/.launched ${q}/.launched.never-started-$(date +%s%N) 2>/dev/null && mkdir ${q}/.launched 2>/dev/null;${revive} else false; fi ) 9>${q}/.takeover.lock`;
    const claim = await this.exec(
      `mkdir -p ${q} && if mkdir ${q}/.launched 2>/dev/null; then echo NEW; elif ${takeOver}; then echo NEW; else echo EXISTS; fi`,
      false,
    );
    if (claim.code !== 0) throw remoteFailure(this.host, "could not create the run folder", claim.stderr);
    if (claim.stdout.trim() !== "NEW") {
      const marker = parseLaunchMarker((await this.exec(`cat ${q}/launch.json 2>/dev/null`, true)).stdout);
      return { ref, host: this.host, started: false, pgid: marker?.pgid ?? null };
    }
    const blueprint = Buffer.from(await blueprintTextForCopy(request.blueprintFile));
    await this.options.connection.withSftp((sftp) => sftpWrite(sftp, `${runDir}/blueprint.md`, blueprint), { idempotent: true });
    const marker: Omit<LaunchMarker, "pgid"> = {
      campaign: ref.campaign,
      blueprintId: ref.blueprintId,
      host: this.host,
      resultDir: `${runDir}/result`,
      gpuIndices: request.gpuIndices,
      launchedAt: new Date().toISOString(),
    };
    const environment = inlineEnvironment({ CUDA_VISIBLE_DEVICES: request.gpuIndices.join(","), A3R_HOST: this.host });
    const inner = `echo $$ > pgid; exec env ${environment} ${workerRunCommand(this.options.a3r, `${runDir}/blueprint.md`, `${runDir}/result`, request.llmAllowance)}`;
    // The marker is written with the group id once the detached shell has recorded it.
    const markerTemplate = JSON.stringify({ ...marker, pgid: 0 }).replace('"pgid":0', '"pgid":PGID');
    const start = [
      `cd ${q}`,
      `setsid -f sh -c ${shellQuote(inner)} </dev/null >>worker.log 2>&1`,
      `i=0; while [ ! -s pgid ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done`,
      `pg=$(cat pgid 2>/dev/null)`,
      `[ -n "$pg" ] || { echo "the worker did not start; see worker.log" >&2; tail -n 5 worker.log >&2; exit 3; }`,
      `printf '%s\\n' ${shellQuote(markerTemplate)} | sed "s/PGID/$pg/" > launch.json.tmp && mv launch.json.tmp launch.json`,
      `echo $pg`,
    ].join(" && ");
    const started = await this.exec(start, false);
    if (started.code !== 0)
      throw new A3rError(
        "LAUNCH_FAILED",
        `could not start the worker for ${ref.blueprintId} on ${this.host}: ${started.stderr.trim() || `exit ${started.code}`}`,
        { hint: `check that "${this.options.a3r}" runs on ${this.host} (a3r hosts check)` },
      );
    const pgid = Number(started.stdout.trim().split("\n").pop());
    return { ref, host: this.host, started: true, pgid: Number.isInteger(pgid) && pgid > 0 ? pgid : null };
  }

  /** The shell snippet that prints everything a poll needs, in marked sections. */
  private pollScript(runDir: string): string {
    return `d=${shellQuote(runDir)}; ${pollBody}`;
  }

  /** One command for many runs: a poll cycle over 200 runs costs one channel, not 200. */
  async pollMany(refs: RunRef[]): Promise<RunProgress[]> {
    const progress: RunProgress[] = [];
    for (let start = 0; start < refs.length; start += 400) {
      const chunk = refs.slice(start, start + 400);
      const dirs = await Promise.all(chunk.map((ref) => this.runDir(ref)));
      const script = `for d in ${dirs.map(shellQuote).join(" ")}; do echo @@run; ${pollBody}; echo; done`;
      const result = await this.exec(script, true, 60_000);
      const blocks = result.stdout.split(/^@@run$/m).slice(1);
      chunk.forEach((ref, index) => progress.push(this.progressFrom(ref, blocks[index] ?? "")));
    }
    return progress;
  }

  private progressFrom(ref: RunRef, stdout: string): RunProgress {
    const parts = splitSections(stdout);
    const alive = parts.alive?.trim();
    const [claimedText, worker] = (parts.claimed?.trim() ?? "").split(/\s+/);
    const claimedSeconds = Number(claimedText || Number.NaN);
    if (nonEmpty(parts.launch) === undefined && nonEmpty(parts.status) === undefined && Number.isFinite(claimedSeconds)) {
      // Claimed by a launch that never wrote launch.json: starting, or cut off mid-launch.
      const base = describeProgress(ref, this.host, {});
      if (claimedSeconds * 1000 < launchGraceMs) return { ...base, state: "launching" };
      // No worker ever started: no run, so the dispatcher launches it again (launch takes the claim over).
      if (worker === "never") return base;
      return { ...base, state: "lost", reason: "the launch started a worker but never recorded it (connection dropped mid-launch?)" };
    }
    return describeProgress(ref, this.host, {
      launch: nonEmpty(parts.launch),
      status: nonEmpty(parts.status),
      finish: nonEmpty(parts.finish),
      metricsTail: nonEmpty(parts.metrics),
      alive: alive === "yes" ? true : alive === "no" ? false : undefined,
      workerLog: nonEmpty(parts.workerlog),
    });
  }

  async poll(ref: RunRef): Promise<RunProgress> {
    const result = await this.exec(this.pollScript(await this.runDir(ref)), true);
    return this.progressFrom(ref, result.stdout);
  }

  async fetch(ref: RunRef, destination: string): Promise<FetchOutcome> {
    const resultDir = `${await this.runDir(ref)}/result`;
    return this.options.connection.withSftp(
      async (sftp) => {
        const complete = await sftpExists(sftp, `${resultDir}/finish.flag`);
        const files: string[] = [];
        if (complete) {
          for (const relative of await sftpListFiles(sftp, resultDir)) {
            // Dot files are locks and temp files of atomic writes, not results.
            if (relative.split("/").some((part) => part.startsWith("."))) continue;
            const content = await sftpRead(sftp, `${resultDir}/${relative}`).catch(() => undefined);
            if (content === undefined) continue; // gone since the listing (a temp file renamed)
            await writeFileAtomic(join(destination, relative), content);
            files.push(relative);
          }
        } else {
          await mkdir(destination, { recursive: true });
          for (const name of liveFiles) {
            const content = await sftpRead(sftp, `${resultDir}/${name}`).catch(() => undefined);
            if (content === undefined) continue;
            await writeFileAtomic(join(destination, name), content);
            files.push(name);
          }
        }
        return { files: files.sort(), complete };
      },
      { idempotent: true },
    );
  }

  async cancel(ref: RunRef): Promise<boolean> {
    const q = shellQuote(await this.runDir(ref));
    // The worker stops the run within the blueprint's grace period and records `cancelled`: KILL only after that.
    const blueprint = (await this.exec(`cat ${q}/blueprint.md 2>/dev/null; true`, true)).stdout;
    const waitMs = cancelWaitMs(blueprintGraceMs(blueprint.trim() === "" ? undefined : blueprint));
    const script = [
      `pg=$(cat ${q}/pgid 2>/dev/null)`,
      `[ -n "$pg" ] || { echo none; exit 0; }`,
      `kill -TERM -- "-$pg" 2>/dev/null || { echo none; exit 0; }`,
      `i=0; while kill -0 -- "-$pg" 2>/dev/null && [ $i -lt ${Math.ceil(waitMs / 50)} ]; do sleep 0.05; i=$((i+1)); done`,
      `kill -KILL -- "-$pg" 2>/dev/null; echo signalled`,
    ].join("; ");
    const result = await this.exec(script, true, waitMs + 30_000);
    return result.stdout.trim().endsWith("signalled");
  }

  async setAside(ref: RunRef): Promise<boolean> {
    const q = shellQuote(await this.runDir(ref));
    const script = [
      `[ -d ${q} ] || { echo none; exit 0; }`,
      `pg=$(cat ${q}/pgid 2>/dev/null)`,
      `if [ -n "$pg" ] && kill -0 -- "-$pg" 2>/dev/null; then echo running; exit 0; fi`,
      `mv ${q} ${q}.set-aside-$(date -u +%Y%m%dT%H%M%SZ) && echo moved`,
    ].join("; ");
    const answer = (await this.exec(script, false)).stdout.trim();
    if (answer === "running")
      throw new A3rError("LAUNCH_FAILED", `${ref.blueprintId} on ${this.host} is still running; stop it before setting it aside`, {
        hint: `a3r stop ${ref.campaign}/${ref.blueprintId}`,
      });
    return answer === "moved";
  }

  async requestStop(ref: RunRef, request: StopRequest): Promise<boolean> {
    return stopRequestAnswer(this.host, await this.exec(stopRequestScript(`${await this.runDir(ref)}/result`, request), true));
  }

  async list(): Promise<RunRef[]> {
    return refsOfMarkerListing((await this.exec(listMarkersScript(shellQuote(await this.workdir())), true)).stdout);
  }

  async close(): Promise<void> {
    await this.options.connection.close();
  }
}

function remoteFailure(host: string, what: string, stderr: string): A3rError {
  return new A3rError("REMOTE_COMMAND_FAILED", `${host}: ${what}: ${stderr.trim().slice(0, 300)}`, {
    hint: "check the workdir in hosts.yaml and its permissions on the host",
  });
}

function splitSections(stdout: string): Partial<Record<(typeof sections)[number], string>> {
  const result: Partial<Record<(typeof sections)[number], string>> = {};
  const byFile: Record<string, (typeof sections)[number]> = { "launch.json": "launch", "status.json": "status", "finish.flag": "finish" };
  let current: (typeof sections)[number] | undefined;
  for (const line of stdout.split("\n")) {
    const header = /^==> .*\/([^/]+) <==$/.exec(line);
    const marker = /^@@(\w+)$/.exec(line);
    const next = header
      ? byFile[header[1]!]
      : marker && (sections as readonly string[]).includes(marker[1]!)
        ? (marker[1] as (typeof sections)[number])
        : undefined;
    if (header || marker) {
      current = next;
      if (current) result[current] = "";
      continue;
    }
    if (current) result[current] += `${line}\n`;
  }
  return result;
}

function nonEmpty(text: string | undefined): string | undefined {
  return text === undefined || text.trim() === "" ? undefined : text;
}

function sftpWrite(sftp: SFTPWrapper, path: string, content: Buffer): Promise<void> {
  return new Promise((resolve, reject) => sftp.writeFile(path, content, (error) => (error ? reject(error) : resolve())));
}

function sftpRead(sftp: SFTPWrapper, path: string): Promise<Buffer> {
  return new Promise((resolve, reject) => sftp.readFile(path, (error, data) => (error ? reject(error) : resolve(data))));
}

function sftpExists(sftp: SFTPWrapper, path: string): Promise<boolean> {
  return new Promise((resolve) => sftp.stat(path, (error) => resolve(!error)));
}

async function sftpListFiles(sftp: SFTPWrapper, root: string, prefix = ""): Promise<string[]> {
  const entries = await new Promise<Array<{ filename: string; attrs: { isDirectory(): boolean; isFile(): boolean } }>>((resolve, reject) =>
    sftp.readdir(prefix ? `${root}/${prefix}` : root, (error, list) => (error ? reject(error) : resolve(list as never))),
  );
  const files: string[] = [];
  for (const entry of entries) {
    const relative = prefix ? `${prefix}/${entry.filename}` : entry.filename;
    if (entry.attrs.isDirectory()) files.push(...(await sftpListFiles(sftp, root, relative)));
    else if (entry.attrs.isFile()) files.push(relative);
  }
  return files;
}
