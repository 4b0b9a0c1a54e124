import { spawn } from "node:child_process";
import { copyFile, cp, mkdir, open, rename, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { blueprintTextForCopy } from "../../blueprints/index.ts";
import { writeJsonAtomic } from "../../core/atomic-file.ts";
import { A3rError } from "../../core/errors.ts";
import { assertCampaignId, assertSafeBlueprintId, writeStopRequest, type StopRequest } from "../../campaign/index.ts";
import { findCampaignOf } from "../../campaign/campaign-of-run.ts";
import { withDirectoryLock } from "../../campaign/directory-lock.ts";
import { liveFiles, type FetchOutcome, type LaunchOutcome, type LaunchRequest, type Launcher, type RunProgress, type RunRef } from "../port/launcher.ts";
import { describeProgress, launchGraceMs, parseLaunchMarker, type LaunchMarker } from "../port/run-progress.ts";
import { workerRunCommand } from "../port/worker-command-line.ts";
import { claimedRuns, createExclusively, listFiles, readTail, readText } from "../port/run-files.ts";
import { isGroupAlive, terminateGroup } from "../../core/process-group.ts";
import { cancelWaitOfBlueprintFile } from "../port/cancel-wait.ts";

/**
 * Runs blueprints on this machine: `a3r worker run` in its own session (setsid, through
 * Node's `detached`), so the run outlives the process that launched it.
 *
 * Layout on the host: `<workdir>/<campaign>/<blueprint id>/` holds launch.json (the
 * idempotency marker, created exclusively), blueprint.md (the copy that runs) and
 * worker.log; the result directory is the request's `resultDir`.
 *
 * Left out: GPU isolation beyond CUDA_VISIBLE_DEVICES, and resource limits (the worker
 * enforces the time budget).
 */
export interface LocalLauncherOptions {
  host: string;
  workdir: string;
  /** How to call a3r here, e.g. "node /opt/a3r/bin/a3r.js". */
  a3r: string;
  /** Milliseconds between TERM and KILL on cancel; default: the blueprint's grace period, twice, plus the worker's writes (port/cancel-wait.ts). */
  cancelGraceMs?: number;
  /** Extra environment for the run (tests, daemons). */
  environment?: Record<string, string>;
}

export class LocalLauncher implements Launcher {
  readonly kind = "local" as const;
  readonly host: string;
  private readonly workdir: string;

  constructor(private readonly options: LocalLauncherOptions) {
    this.host = options.host;
    this.workdir = resolve(options.workdir);
  }

  runDir(ref: RunRef): string {
    assertCampaignId(ref.campaign);
    assertSafeBlueprintId(ref.blueprintId);
    return join(this.workdir, ref.campaign, ref.blueprintId);
  }

  async readMarker(ref: RunRef): Promise<LaunchMarker | undefined> {
    return parseLaunchMarker(await readText(join(this.runDir(ref), "launch.json")));
  }

  async launch(request: LaunchRequest): Promise<LaunchOutcome> {
    const ref = { campaign: request.campaign, blueprintId: request.blueprintId };
    const runDir = this.runDir(ref);
    await mkdir(runDir, { recursive: true });
    const markerPath = join(runDir, "launch.json");
    const resultDir = resolve(request.resultDir);
    const marker: LaunchMarker = {
      campaign: ref.campaign,
      blueprintId: ref.blueprintId,
      host: this.host,
      resultDir,
      gpuIndices: request.gpuIndices,
      pgid: null,
      launchedAt: new Date().toISOString(),
    };
    if (!(await this.claim(ref, markerPath, marker, request.revive === true))) {
      const existing = await this.readMarker(ref);
      return { ref, host: this.host, started: false, pgid: existing?.pgid ?? null };
    }
    const blueprintCopy = join(runDir, "blueprint.md");
    await writeFile(blueprintCopy, await blueprintTextForCopy(request.blueprintFile));
    await mkdir(resultDir, { recursive: true });
    // A run in a campaign folder is held to the campaign's live LLM budget; one away from
    // it (a queue daemon's) only knows the allowance it was given.
    const allowance = request.llmAllowance !== undefined && (await findCampaignOf(resultDir)) === undefined ? request.llmAllowance : undefined;
    const log = await open(join(runDir, "worker.log"), "a");
    let pgid: number;
    try {
      const child = spawn("sh", ["-c", `exec ${workerRunCommand(this.options.a3r, blueprintCopy, resultDir, allowance)}`], {
        cwd: runDir,
        detached: true,
        stdio: ["ignore", log.fd, log.fd],
        env: {
          ...process.env,
          ...this.options.environment,
          CUDA_VISIBLE_DEVICES: request.gpuIndices.join(","),
          A3R_HOST: this.host,
        },
      });
      pgid = await new Promise<number>((resolveSpawn, reject) => {
        child.once("error", reject);
        child.once("spawn", () => resolveSpawn(child.pid!));
      });
      child.unref();
    } catch (error) {
      throw new A3rError("LAUNCH_FAILED", `could not start the worker for ${ref.blueprintId} on ${this.host}: ${(error as Error).message}`, { cause: error });
    } finally {
      await log.close();
    }
    await writeJsonAtomic(markerPath, { ...marker, pgid });
    return { ref, host: this.host, started: true, pgid };
  }

  /**
   * Writes the launch claim; false when the run is already claimed. The claim is written
   * whole to a private file, then hard-linked to launch.json: link fails when the name
   * exists, so two launches racing start exactly one run, and a launcher killed mid-write
   * cannot leave an empty launch.json behind (an "wx" open-then-write could, and a claim
   * nobody can read was never taken over: the run was relaunched and refused forever).
   *
   * A claim whose worker never started (see `neverStarted`), or one nobody can read that
   * is past the grace, is set aside and claimed again: a launcher killed between its claim
   * and the spawn must not lose the run. That is judged and done under a short lock, so
   * two launchers that both find the claim abandoned cannot each set aside the other's
   * fresh one.
   */
  private async claim(ref: RunRef, markerPath: string, marker: LaunchMarker, revive: boolean): Promise<boolean> {
    const text = `${JSON.stringify(marker)}\n`;
    if (await createExclusively(markerPath, text)) return true;
    // Held for a rename and a link: a lock older than 5 s was left by a launcher killed inside it.
    return withDirectoryLock(
      join(dirname(markerPath), ".takeover.lock"),
      async () => {
        const existing = await this.readMarker(ref);
        const setAside =
          existing === undefined
            ? (await staleUnreadable(markerPath)) && "launch.unreadable"
            : ((await neverStarted(existing)) && "launch.never-started") || (revive && (await workerGone(existing)) && "launch.worker-gone");
        if (!setAside) return false;
        try {
          await rename(markerPath, join(dirname(markerPath), `${setAside}-${Date.now()}.json`));
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
        }
        return createExclusively(markerPath, text);
      },
      { staleMs: 5_000, timeoutMs: 15_000 },
    );
  }

  async poll(ref: RunRef): Promise<RunProgress> {
    const marker = await this.readMarker(ref);
    // A claim whose worker never started is no run: the dispatcher may launch it again.
    if (!marker || (await neverStarted(marker))) return describeProgress(ref, this.host, {});
    // Whether the group lives is asked before finish.flag is read: a run that ends in
    // between then reads as running once more, never as a dead group without its flag (lost).
    const alive = marker.pgid === null ? undefined : isGroupAlive(marker.pgid);
    const [status, finish, metrics] = await Promise.all([
      readText(join(marker.resultDir, "status.json")),
      readText(join(marker.resultDir, "finish.flag")),
      readTail(join(marker.resultDir, "metrics.jsonl"), 16_384),
    ]);
    return describeProgress(ref, this.host, {
      launch: JSON.stringify(marker),
      status,
      finish,
      metricsTail: metrics,
      // No pgid yet: still starting (within the grace; past it, `neverStarted` above).
      alive,
      ...(alive === false && finish === undefined ? { workerLog: await readTail(join(this.runDir(ref), "worker.log"), 600) } : {}),
    });
  }

  pollMany(refs: RunRef[]): Promise<RunProgress[]> {
    return Promise.all(refs.map((ref) => this.poll(ref)));
  }

  async fetch(ref: RunRef, destination: string): Promise<FetchOutcome> {
    const marker = await this.readMarker(ref);
    if (!marker) return { files: [], complete: false };
    const complete = (await readText(join(marker.resultDir, "finish.flag"))) !== undefined;
    const target = resolve(destination);
    if (target !== marker.resultDir) {
      await mkdir(target, { recursive: true });
      if (complete) await cp(marker.resultDir, target, { recursive: true, force: true, filter: (source) => !basename(source).startsWith(".") });
      else for (const name of liveFiles) await copyFile(join(marker.resultDir, name), join(target, name)).catch(() => undefined);
    }
    return { files: await listFiles(target), complete };
  }

  async cancel(ref: RunRef): Promise<boolean> {
    const marker = await this.readMarker(ref);
    if (!marker?.pgid || !isGroupAlive(marker.pgid)) return false;
    // The worker stops the run within the blueprint's grace period and records `cancelled`: KILL only after that.
    const waitMs = this.options.cancelGraceMs ?? (await cancelWaitOfBlueprintFile(join(this.runDir(ref), "blueprint.md")));
    return (await terminateGroup(marker.pgid, waitMs)) !== "gone";
  }

  async setAside(ref: RunRef): Promise<boolean> {
    const marker = await this.readMarker(ref);
    if (!marker) return false;
    if (marker.pgid !== null && isGroupAlive(marker.pgid)) {
      throw new A3rError("LAUNCH_FAILED", `${ref.blueprintId} on ${this.host} is still running; stop it before setting it aside`, {
        hint: `a3r stop ${ref.campaign}/${ref.blueprintId}`,
      });
    }
    const stamp = new Date()
      .toISOString()
      .replaceAll(":", "")
      .replace(/\.\d+Z$/, "Z");
    const runDir = this.runDir(ref);
    // The result directory first: a claim without its results reads as launchable again.
    await rename(marker.resultDir, `${marker.resultDir}.set-aside-${stamp}`).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    });
    await rename(runDir, `${runDir}.set-aside-${stamp}`);
    return true;
  }

  async requestStop(ref: RunRef, request: StopRequest): Promise<boolean> {
    const marker = await this.readMarker(ref);
    if (!marker || (await readText(join(marker.resultDir, "finish.flag"))) !== undefined) return false;
    await writeStopRequest(marker.resultDir, request);
    return true;
  }

  async list(): Promise<RunRef[]> {
    return claimedRuns(this.workdir);
  }

  async close(): Promise<void> {}
}

/**
 * A launch.json that does not parse and is older than the launch grace: written by an
 * older a3r killed mid-write, or damaged. Its run cannot be followed, so it is no run.
 */
async function staleUnreadable(path: string): Promise<boolean> {
  const modified = await stat(path).then(
    (info) => info.mtimeMs,
    () => undefined,
  );
  return modified !== undefined && Date.now() - modified > launchGraceMs;
}

/** The claim's worker group is dead and the run has no finish.flag: nobody supervises it. */
async function workerGone(marker: LaunchMarker): Promise<boolean> {
  if (marker.pgid === null || isGroupAlive(marker.pgid)) return false;
  return (await readText(join(marker.resultDir, "finish.flag"))) === undefined;
}

/**
 * A claim past the launch grace with no process group and no status.json: the launcher
 * died between writing the claim and starting the worker (a worker that did start writes
 * status.json at once, and the launcher records its group right after the spawn).
 */
async function neverStarted(marker: LaunchMarker): Promise<boolean> {
  if (marker.pgid !== null || Date.now() - Date.parse(marker.launchedAt) <= launchGraceMs) return false;
  return (await readText(join(marker.resultDir, "status.json"))) === undefined;
}
