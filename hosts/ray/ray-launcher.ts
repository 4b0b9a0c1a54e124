import { cp, mkdir, rename, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { blueprintTextForCopy } from "../../blueprints/index.ts";
import { assertCampaignId, assertSafeBlueprintId, writeStopRequest, type StopRequest } from "../../campaign/index.ts";
import { A3rError } from "../../core/errors.ts";
import { cancelWaitOfBlueprintFile } from "../port/cancel-wait.ts";
import {
  liveFiles,
  runKey,
  type FetchOutcome,
  type LaunchOutcome,
  type LaunchRequest,
  type Launcher,
  type RunProgress,
  type RunRef,
} from "../port/launcher.ts";
import { describeProgress, launchGraceMs, parseLaunchMarker, type LaunchMarker } from "../port/run-progress.ts";
import { workerRunCommand } from "../port/worker-command-line.ts";
import { claimedRuns, createExclusively, listFiles, readTail, readText } from "../port/run-files.ts";
import type { RayHostConfig } from "./ray-config.ts";
import { RayDriver, type ActorView, type RayNodeView } from "./ray-driver.ts";

/**
 * Runs blueprints on a Ray cluster: each run is a detached, named actor
 * (`a3r.<campaign>+<blueprint id>`) asking Ray for the run's GPUs and CPUs, which Ray
 * places on whichever node has room and which runs `a3r worker run` there (ray_driver.py).
 * Ray queues what does not fit; the scheduler's slots (the cluster's GPUs, or CPUs over
 * `cpus_per_run`) keep a stage from flooding it.
 *
 * Layout on the shared workdir (the nodes and this machine see the same files):
 * `<workdir>/<campaign>/<blueprint id>/` holds launch.json (the claim, created exclusively),
 * blueprint.md, worker.log, ray-worker.json (the worker's pid and node), ray-starts.jsonl
 * (every start and adoption of the worker) and `result/`, the result directory `fetch`
 * copies back.
 *
 * The run's truth is its result directory; Ray adds whether its actor lives (ALIVE,
 * RESTARTING, waiting for resources) or not. The actor outlives the driver and a killed
 * Ray worker process (Ray restarts it; the new one adopts the running worker), so a
 * leader killed and resumed finds every run by name.
 *
 * Left out: runtime_env (working_dir, pip) packaging, placement groups and multi-node runs.
 */
export interface RayLauncherOptions {
  host: RayHostConfig;
  /** The driver; tests pass one to kill it. Default: one for the host. */
  driver?: RayDriver;
}

/** Actor states in which Ray will still run (or is running) the run's worker. */
const livingStates = new Set(["DEPENDENCIES_UNREADY", "PENDING_CREATION", "ALIVE", "RESTARTING"]);
const waitingStates = new Set(["DEPENDENCIES_UNREADY", "PENDING_CREATION"]);

export function actorNameOf(ref: RunRef): string {
  return `a3r.${runKey(ref)}`;
}

export class RayLauncher implements Launcher {
  readonly kind = "ray" as const;
  readonly host: string;
  readonly driver: RayDriver;

  constructor(private readonly options: RayLauncherOptions) {
    this.host = options.host.name;
    const { python, address, namespace } = options.host;
    this.driver = options.driver ?? new RayDriver({ host: this.host, python, address, namespace });
  }

  runDir(ref: RunRef): string {
    assertCampaignId(ref.campaign);
    assertSafeBlueprintId(ref.blueprintId);
    return join(this.options.host.workdir, ref.campaign, ref.blueprintId);
  }

  async launch(request: LaunchRequest): Promise<LaunchOutcome> {
    const ref = { campaign: request.campaign, blueprintId: request.blueprintId };
    const runDir = this.runDir(ref);
    await mkdir(join(runDir, "result"), { recursive: true });
    const marker: LaunchMarker & { actor: string } = {
      campaign: ref.campaign,
      blueprintId: ref.blueprintId,
      host: this.host,
      resultDir: join(runDir, "result"),
      gpuIndices: request.gpuIndices,
      pgid: null,
      launchedAt: new Date().toISOString(),
      actor: actorNameOf(ref),
    };
    const claimed = await createExclusively(join(runDir, "launch.json"), `${JSON.stringify(marker)}\n`);
    if (!claimed && !(await this.mayPlaceAgain(ref, request.revive === true))) return { ref, host: this.host, started: false, pgid: null };
    // Also when placing again: a launcher killed between its claim and this write left none.
    if (claimed || (await readText(join(runDir, "blueprint.md"))) === undefined)
      await writeFile(join(runDir, "blueprint.md"), await blueprintTextForCopy(request.blueprintFile));
    const { host } = this.options;
    const gpus = request.gpuIndices.length > 0 ? request.gpuIndices.length : host.gpus_per_run;
    const created = await this.driver.request<string>("launch", {
      name: actorNameOf(ref),
      run_dir: runDir,
      command: workerRunCommand(host.a3r, join(runDir, "blueprint.md"), join(runDir, "result"), request.llmAllowance),
      environment: { ...host.environment, A3R_HOST: this.host },
      num_gpus: gpus,
      num_cpus: host.cpus_per_run,
      max_restarts: host.max_restarts,
    });
    return { ref, host: this.host, started: created === "created", pgid: null };
  }

  /**
   * A run already claimed is placed again only when nothing will run it: its actor is gone
   * and either it never started (a launcher killed between claim and placement, past the
   * grace) or `revive` asks for a new worker on its result directory (which re-attaches or
   * resumes from its checkpoint). A finished run never is.
   */
  private async mayPlaceAgain(ref: RunRef, revive: boolean): Promise<boolean> {
    const runDir = this.runDir(ref);
    if ((await readText(join(runDir, "result", "finish.flag"))) !== undefined) return false;
    const actor = (await this.actors([ref]))[0];
    if (actor && livingStates.has(actor.state)) return false;
    if (revive) return true;
    const marker = parseLaunchMarker(await readText(join(runDir, "launch.json")));
    const started = (await readText(join(runDir, "ray-starts.jsonl"))) !== undefined;
    return !started && (marker === undefined || Date.now() - Date.parse(marker.launchedAt) > launchGraceMs);
  }

  private async actors(refs: RunRef[]): Promise<Array<ActorView | undefined>> {
    const names = refs.map(actorNameOf);
    const found = await this.driver.request<Record<string, ActorView>>("states", { names });
    return names.map((name) => found[name]);
  }

  async pollMany(refs: RunRef[]): Promise<RunProgress[]> {
    if (refs.length === 0) return [];
    // Ray is asked before the files are read: an actor it calls dead has a worker that
    // already ended, so the finish.flag it wrote is there to read (never a false "lost").
    const actors = await this.actors(refs);
    return Promise.all(refs.map((ref, index) => this.progressOf(ref, actors[index])));
  }

  async poll(ref: RunRef): Promise<RunProgress> {
    return (await this.pollMany([ref]))[0]!;
  }

  private async progressOf(ref: RunRef, actor: ActorView | undefined): Promise<RunProgress> {
    const runDir = this.runDir(ref);
    const resultDir = join(runDir, "result");
    const [launch, status, finish, metricsTail] = await Promise.all([
      readText(join(runDir, "launch.json")),
      readText(join(resultDir, "status.json")),
      readText(join(resultDir, "finish.flag")),
      readTail(join(resultDir, "metrics.jsonl"), 16_384),
    ]);
    const alive = actor !== undefined && livingStates.has(actor.state);
    const progress = describeProgress(ref, this.host, {
      launch,
      status,
      finish,
      metricsTail,
      alive,
      ...(!alive && finish === undefined ? { workerLog: await readTail(join(runDir, "worker.log"), 600) } : {}),
    });
    if (actor && waitingStates.has(actor.state) && !progress.finished && status === undefined) {
      const gpus = this.options.host.gpus_per_run;
      return {
        ...progress,
        state: "queued",
        reason: `waiting in Ray for room (${progress.gpuIndices.length || gpus} GPU, ${this.options.host.cpus_per_run} CPU)`,
      };
    }
    if (progress.state === "lost" && actor?.death) return { ...progress, reason: `${progress.reason}; Ray: ${actor.death}` };
    return progress;
  }

  async fetch(ref: RunRef, destination: string): Promise<FetchOutcome> {
    const resultDir = join(this.runDir(ref), "result");
    const complete = (await readText(join(resultDir, "finish.flag"))) !== undefined;
    await mkdir(destination, { recursive: true });
    // Dot files are locks and temp files of atomic writes, not results.
    if (complete) await cp(resultDir, destination, { recursive: true, force: true, filter: (source) => !basename(source).startsWith(".") });
    else for (const name of liveFiles) await cp(join(resultDir, name), join(destination, name)).catch(() => undefined);
    return { files: await listFiles(destination), complete };
  }

  async cancel(ref: RunRef): Promise<boolean> {
    // The worker stops the run within the blueprint's grace period and records `cancelled`: KILL only after that.
    // Up to a minute more: an actor being restarted is waited for (ray_driver.py op_cancel).
    const waitMs = await cancelWaitOfBlueprintFile(join(this.runDir(ref), "blueprint.md"));
    const answer = await this.driver.request<string>("cancel", { name: actorNameOf(ref), grace_seconds: waitMs / 1000 }, waitMs + 120_000);
    return answer !== "none";
  }

  async setAside(ref: RunRef): Promise<boolean> {
    const runDir = this.runDir(ref);
    if ((await readText(join(runDir, "launch.json"))) === undefined) return false;
    const actor = (await this.actors([ref]))[0];
    if (actor && livingStates.has(actor.state))
      throw new A3rError("LAUNCH_FAILED", `${ref.blueprintId} on ${this.host} is still running (or waiting) in Ray; stop it before setting it aside`, {
        hint: `a3r stop ${ref.campaign}/${ref.blueprintId}`,
      });
    const stamp = new Date()
      .toISOString()
      .replaceAll(":", "")
      .replace(/\.\d+Z$/, "Z");
    await rename(runDir, `${runDir}.set-aside-${stamp}`);
    return true;
  }

  /** The worker on its node reads it from the shared result folder, as on any host. */
  async requestStop(ref: RunRef, request: StopRequest): Promise<boolean> {
    const resultDir = join(this.runDir(ref), "result");
    if ((await readText(join(this.runDir(ref), "launch.json"))) === undefined) return false;
    if ((await readText(join(resultDir, "finish.flag"))) !== undefined) return false;
    await writeStopRequest(resultDir, request);
    return true;
  }

  async list(): Promise<RunRef[]> {
    return claimedRuns(this.options.host.workdir);
  }

  /** The cluster's nodes with their resources, total and free now. */
  async nodes(): Promise<RayNodeView[]> {
    return this.driver.request<RayNodeView[]>("nodes");
  }

  /** `<a3r> --version`, run as a zero-resource Ray task on some node. */
  async a3rVersion(): Promise<{ code: number; output: string; node: string }> {
    return this.driver.request("a3r_version", { command: this.options.host.a3r }, 150_000);
  }

  async close(): Promise<void> {
    await this.driver.close();
  }
}
