import { InvalidArgumentError, type Command } from "commander";
import { fileURLToPath } from "node:url";

/**
 * Adds `daemon` to a commander command: `a3r hosts daemon` today, `a3r worker daemon` once
 * the CLI wires it there (`registerWorkerDaemonCommand(workerCommand)`).
 */
const checkoutA3r = `${process.execPath} ${fileURLToPath(new URL("../bin/a3r.js", import.meta.url))}`;

function wholeNumber(name: string) {
  return (value: string): number => {
    if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError(`${name} must be a whole number >= 0.`);
    return Number(value);
  };
}

interface DaemonFlags {
  redis: string;
  gpus: number;
  workdir: string;
  queue: string;
  prefix: string;
  maxRuns?: number;
  name?: string;
  a3r: string;
  reportInterval: number;
}

export function registerWorkerDaemonCommand(parent: Command): Command {
  return parent
    .command("daemon")
    .description("pull blueprints from a Redis queue while GPU slots are free, run them detached, report back; re-attaches to its runs after a restart")
    .requiredOption("--redis <url>", "Redis URL, e.g. redis://redis.cluster.example:6379 (maxmemory-policy must be noeviction)")
    .requiredOption("--gpus <n>", "GPUs on this node (runs get CUDA_VISIBLE_DEVICES from 0..n-1)", wholeNumber("--gpus"))
    .requiredOption("--workdir <dir>", "folder for run folders and result directories on this node")
    .option("--queue <name>", "queue name (as in hosts.yaml)", "a3r")
    .option("--prefix <prefix>", "BullMQ key prefix (as in hosts.yaml)", "bull")
    .option("--max-runs <n>", "most runs at once (default: one per GPU, at least one)", wholeNumber("--max-runs"))
    .option("--name <name>", "daemon name, stable across restarts (default: host name + workdir hash)")
    .option("--a3r <command>", "how to call a3r for `worker run`", checkoutA3r)
    .option("--report-interval <ms>", "milliseconds between progress reports", wholeNumber("--report-interval"), 1000)
    .action(async (flags: DaemonFlags) => {
      const WorkerDaemon = await (await import("../hosts/index.ts")).loadWorkerDaemon();
      const daemon = await WorkerDaemon.start({
        redisUrl: flags.redis,
        queue: flags.queue,
        prefix: flags.prefix,
        gpus: flags.gpus,
        workdir: flags.workdir,
        a3r: flags.a3r,
        reportIntervalMs: flags.reportInterval,
        ...(flags.maxRuns !== undefined ? { maxRuns: flags.maxRuns } : {}),
        ...(flags.name !== undefined ? { name: flags.name } : {}),
        log: (line) => process.stderr.write(`${new Date().toISOString()} ${line}\n`),
      });
      process.stdout.write(`daemon ${daemon.name} ready: queue ${flags.queue}, ${flags.gpus} GPU(s), re-attached to ${daemon.reattached} run(s)\n`);
      await new Promise<void>((resolve) => {
        const stop = (signal: string): void => {
          process.stderr.write(`${signal}: daemon stops pulling; its runs keep going and a restart re-attaches\n`);
          void daemon.stop().then(resolve, resolve);
        };
        process.once("SIGTERM", () => stop("SIGTERM"));
        process.once("SIGINT", () => stop("SIGINT"));
      });
    });
}
