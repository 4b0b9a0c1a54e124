/**
 * The proposal–review client: two policies, each on its own swarm server. The same run as
 * `a3r swarm client proposal-review --url proposer=URL --url reviewer=URL` (task.ts), kept as
 * a script that shows the SDK's multi-model helper without the CLI.
 *
 *   a3r swarm serve --config examples/tasks/proposal-review/proposer/swarm.yaml --port 10091
 *   a3r swarm serve --config examples/tasks/proposal-review/reviewer/swarm.yaml --port 10092
 *   node bin/run-ts.js examples/tasks/proposal-review/client.ts \
 *     --proposer http://127.0.0.1:10091 --reviewer http://127.0.0.1:10092 --episodes 1500
 *
 * Options: --episodes N (default 1500), --concurrency K (8), --seed S, --discard-timeout
 * SECONDS (600), --json (print only the summary, as one JSON line). Exit code 1 when no
 * episode completed or a server's engine failed, 2 for bad usage.
 */
import { parseArgs } from "node:util";
import { SwarmClient } from "../../../swarm/client/index.ts";
import { runProposalReview } from "./run-proposal-review.ts";

function usage(message: string): never {
  process.stderr.write(
    `proposal-review client: ${message}\nusage: client.ts --proposer URL --reviewer URL [--episodes N] [--concurrency K] [--seed S] [--discard-timeout SECONDS] [--json]\n`,
  );
  process.exit(2);
}

function integer(name: string, value: string | undefined, fallback: number | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < min || number > max) usage(`--${name} must be an integer from ${min} to ${max} (got "${value}")`);
  return number;
}

function serverUrl(name: string, value: string | undefined): string {
  if (value === undefined) usage(`--${name} is required: the URL of the ${name}'s swarm server, e.g. http://127.0.0.1:10091`);
  try {
    const url = new URL(value);
    if (url.protocol === "http:" || url.protocol === "https:") return value;
  } catch {}
  return usage(`--${name} must be an http(s) URL such as http://127.0.0.1:10091 (got "${value}")`);
}

let parsed;
try {
  parsed = parseArgs({
    options: {
      proposer: { type: "string" },
      reviewer: { type: "string" },
      episodes: { type: "string" },
      concurrency: { type: "string" },
      seed: { type: "string" },
      "discard-timeout": { type: "string" },
      json: { type: "boolean" },
    },
  }).values;
} catch (error) {
  usage(error instanceof Error ? error.message : String(error));
}

const urls = { proposer: serverUrl("proposer", parsed.proposer), reviewer: serverUrl("reviewer", parsed.reviewer) };
const episodes = integer("episodes", parsed.episodes, 1500, 1, 10_000_000)!;
const seed = integer("seed", parsed.seed, undefined, 0, 2 ** 31);
const clients = {
  proposer: new SwarmClient({ url: urls.proposer, backoff: { initialMs: 20, maxMs: 1000 } }),
  reviewer: new SwarmClient({ url: urls.reviewer, backoff: { initialMs: 20, maxMs: 1000 } }),
};
const controller = new AbortController();
process.once("SIGINT", () => controller.abort(new Error("interrupted")));

let window: Array<{ proposer: number; reviewer: number }> = [];
const summary = await runProposalReview({
  clients,
  episodes,
  concurrency: integer("concurrency", parsed.concurrency, 8, 1, 1024)!,
  ...(seed === undefined ? {} : { seed }),
  discardEpisodeTimeout: integer("discard-timeout", parsed["discard-timeout"], 600, 1, 86_400)!,
  signal: controller.signal,
  onEpisode: (done, record) => {
    if (parsed.json) return;
    if (record.rewards) window.push(record.rewards);
    if (done % 100 === 0) {
      const mean = (role: "proposer" | "reviewer"): string => (window.reduce((sum, rewards) => sum + rewards[role], 0) / Math.max(1, window.length)).toFixed(2);
      process.stdout.write(`${done}/${episodes} episodes, last ${window.length}: proposer reward ${mean("proposer")}, reviewer reward ${mean("reviewer")}\n`);
      window = [];
    }
  },
});

if (parsed.json) process.stdout.write(`${JSON.stringify({ task: "proposal-review", urls, ...summary })}\n`);
else
  process.stdout.write(
    `proposal-review: ${summary.completed}/${summary.requested} episodes, reward mean proposer ${summary.rewardMean.proposer.toFixed(3)} reviewer ${summary.rewardMean.reviewer.toFixed(3)}, failed ${summary.failed}${summary.stoppedEarly ? ` (stopped early: ${summary.stoppedEarly})` : ""}\n`,
  );
if ((summary.completed === 0 && summary.failed > 0) || summary.engineFailed !== undefined) process.exitCode = 1;
