import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { cpus, hostname, tmpdir, totalmem, userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort, stopProcess } from "./free-port.ts";

const run = promisify(execFile);

/**
 * A real single-node Slurm (22.05, Debian's slurmctld + slurmd + munge) for one test file:
 * its own munged (key, socket), its own ports, state, spool and log folders in a temp
 * folder, no systemd and no cgroups (proctrack/linuxproc, task/none), no accounting
 * database (so `sacct` has no answer, as on a cluster whose slurmdbd lags or is absent).
 * Two fake GPUs through Gres when this machine lets root make device nodes (`gpus` says).
 *
 * ```ts
 * const slurm = await startSlurmCluster();
 * // SLURM_CONF=slurm.confFile sbatch ...   (or hosts.yaml `slurm_conf: ${slurm.confFile}`)
 * await slurm.stop();
 * ```
 *
 * Clients find the cluster through SLURM_CONF only; nothing is written outside the temp
 * folder, so several test files can each run their own cluster at once.
 */
export interface SlurmClusterHandle {
  dir: string;
  confFile: string;
  partition: string;
  nodeName: string;
  /** Fake GPUs the node offers through Gres (0 where device nodes cannot be made). */
  gpus: number;
  /** CPUs the node offers: more than the machine has (config_overrides), so many small jobs run at once. */
  cpus: number;
  /** With `preemption`: a partition on the same node whose jobs preempt (requeue) `partition`'s. */
  urgentPartition?: string;
  /** Runs a Slurm client command against this cluster. */
  client(command: string, args: string[]): Promise<{ stdout: string; stderr: string }>;
  stop(): Promise<void>;
}

const binaries = ["/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "/usr/bin/sbatch", "/usr/bin/squeue", "/usr/bin/scancel", "/usr/bin/sinfo"];
const missing = binaries.filter((binary) => !existsSync(binary));

/** Why the Slurm tests cannot run here, or undefined when they can. */
export const slurmMissing: string | undefined =
  missing.length === 0
    ? undefined
    : `Slurm is not installed (${missing.join(", ")} missing): apt-get install slurmctld slurmd slurm-client munge, as .ci/run does`;

export async function startSlurmCluster(options: { cpus?: number; preemption?: boolean } = {}): Promise<SlurmClusterHandle> {
  if (slurmMissing) throw new Error(slurmMissing);
  const dir = await mkdtemp(join(tmpdir(), "a3r-slurm-"));
  const children: ChildProcess[] = [];
  const stopAll = async () => {
    for (const child of children.reverse()) await stopProcess(child, 5000);
  };
  try {
    // munged refuses a socket in a folder others cannot traverse (mkdtemp makes it 0700).
    await chmod(dir, 0o755);
    for (const folder of ["state", "spool", "log"]) await mkdir(join(dir, folder));
    const socket = join(dir, "munge.sock");
    const key = join(dir, "munge.key");
    await writeFile(key, randomBytes(1024), { mode: 0o400 });
    await chmod(key, 0o400);
    // munged forks into the background unless told not to; -F keeps it our child.
    const munged = spawn(
      "/usr/sbin/munged",
      [
        "-F",
        `--socket=${socket}`,
        `--key-file=${key}`,
        `--pid-file=${join(dir, "munged.pid")}`,
        `--log-file=${join(dir, "log", "munged.log")}`,
        `--seed-file=${join(dir, "munge.seed")}`,
      ],
      { stdio: "ignore" },
    );
    children.push(munged);
    await waitFor(() => existsSync(socket), 10_000, "munged did not create its socket", munged);

    const nodeName = hostname().split(".")[0]!;
    const gpus = await makeFakeGpus(dir);
    const nodeCpus = options.cpus ?? Math.max(16, cpus().length);
    const memoryMb = Math.max(1024, Math.floor(totalmem() / 1024 / 1024) - 512);
    const user = userInfo().username;
    const [controllerPort, nodePort] = [await freePort(), await freePort()];
    const confFile = join(dir, "slurm.conf");
    const partition = "a3rtest";
    const urgent = "a3rurgent";
    await writeFile(
      confFile,
      [
        "ClusterName=a3rtest",
        `SlurmctldHost=${nodeName}(127.0.0.1)`,
        `SlurmctldPort=${controllerPort}`,
        `SlurmdPort=${nodePort}`,
        "AuthType=auth/munge",
        "CredType=cred/munge",
        `AuthInfo=socket=${socket}`,
        `SlurmUser=${user}`,
        `SlurmdUser=${user}`,
        `StateSaveLocation=${join(dir, "state")}`,
        `SlurmdSpoolDir=${join(dir, "spool")}`,
        `SlurmctldPidFile=${join(dir, "slurmctld.pid")}`,
        `SlurmdPidFile=${join(dir, "slurmd.pid")}`,
        `SlurmctldLogFile=${join(dir, "log", "slurmctld.log")}`,
        `SlurmdLogFile=${join(dir, "log", "slurmd.log")}`,
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        `JobCompType=jobcomp/filetxt`,
        `JobCompLoc=${join(dir, "log", "jobcomp.txt")}`,
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        // The node may claim more CPUs than the machine has: tests run many tiny jobs at once.
        "SlurmdParameters=config_overrides",
        "MpiDefault=none",
        "ReturnToService=2",
        "MinJobAge=600",
        "KillWait=5",
        "SchedulerParameters=sched_interval=1",
        ...(gpus > 0 ? ["GresTypes=gpu"] : []),
        `NodeName=${nodeName} NodeAddr=127.0.0.1 CPUs=${nodeCpus} RealMemory=${memoryMb}${gpus > 0 ? ` Gres=gpu:${gpus}` : ""} State=UNKNOWN`,
        `PartitionName=${partition} Nodes=${nodeName} Default=YES MaxTime=INFINITE State=UP`,
        // A higher tier on the same node: its jobs requeue the ones in the way (PreemptMode=REQUEUE).
        ...(options.preemption
          ? [
              "PreemptType=preempt/partition_prio",
              "PreemptMode=REQUEUE",
              `PartitionName=${urgent} Nodes=${nodeName} PriorityTier=2 PreemptMode=off MaxTime=INFINITE State=UP`,
            ]
          : []),
        "",
      ].join("\n"),
    );
    if (gpus > 0) await writeFile(join(dir, "gres.conf"), `NodeName=${nodeName} Name=gpu File=${join(dir, "gpu")}[0-${gpus - 1}]\n`);
    const environment = { ...process.env, SLURM_CONF: confFile };
    const controller = spawn("/usr/sbin/slurmctld", ["-D", "-i", "-f", confFile], { stdio: "ignore", env: environment });
    children.push(controller);
    const node = spawn("/usr/sbin/slurmd", ["-D", "-N", nodeName, "-f", confFile], { stdio: "ignore", env: environment });
    children.push(node);
    const client = async (command: string, args: string[]) => run(command, args, { env: environment, timeout: 30_000 });
    const log = async () =>
      `${await readFile(join(dir, "log", "slurmctld.log"), "utf8").catch(() => "")}\n${await readFile(join(dir, "log", "slurmd.log"), "utf8").catch(() => "")}`;
    try {
      await waitForAsync(
        async () => {
          const { stdout } = await client("sinfo", ["-h", "-p", partition, "-o", "%T"]).catch(() => ({ stdout: "" }));
          return /^(idle|mixed|allocated)/m.test(stdout.trim());
        },
        30_000,
        [controller, node],
      );
    } catch (error) {
      throw new Error(`the Slurm node did not come up: ${(error as Error).message}\n${(await log()).slice(-3000)}`);
    }
    return {
      dir,
      confFile,
      partition,
      nodeName,
      gpus,
      cpus: nodeCpus,
      ...(options.preemption ? { urgentPartition: urgent } : {}),
      client,
      stop: async () => {
        // Jobs first, so no slurmstepd (and no worker) outlives the cluster.
        for (const name of options.preemption ? [partition, urgent] : [partition])
          await client("scancel", ["--full", "--partition", name]).catch(() => undefined);
        await waitForAsync(
          async () =>
            (await client("squeue", ["-h", "-t", "RUNNING,COMPLETING,CONFIGURING,SUSPENDED", "-o", "%i"]).catch(() => ({ stdout: "" }))).stdout.trim() === "",
          20_000,
          [],
        ).catch(() => undefined);
        await stopAll();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await stopAll();
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/** Character devices like /dev/null, named as GPUs: Gres counts files, not hardware. */
async function makeFakeGpus(dir: string): Promise<number> {
  try {
    for (const index of [0, 1]) await run("mknod", [join(dir, `gpu${index}`), "c", "1", "3"]);
    return 2;
  } catch {
    return 0;
  }
}

async function waitFor(done: () => boolean, timeoutMs: number, what: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (child.exitCode !== null) throw new Error(`${what}: it exited with code ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function waitForAsync(done: () => Promise<boolean>, timeoutMs: number, watched: ChildProcess[]): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    const dead = watched.find((child) => child.exitCode !== null);
    if (dead) throw new Error(`${dead.spawnfile} exited with code ${dead.exitCode}`);
    if (Date.now() > deadline) throw new Error(`not ready within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
