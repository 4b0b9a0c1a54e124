import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { Agent, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SwarmClient } from "../swarm/client/index.ts";
import { median } from "./stats.ts";
import type { Benchmark, BenchReport } from "./report.ts";

/**
 * What the swarm gateway adds to a chat completion. An upstream stub (a node:http server
 * answering OpenAI-format completions instantly, in its own process) is called by 64
 * concurrent clients twice: straight, and through a swarm server (its own process, the
 * `openai-compatible` engine pointed at the stub, one claimed episode per client, every
 * call authenticated and recorded). Added latency = swarm percentile − direct percentile;
 * throughput ratio = swarm requests/s ÷ direct requests/s, measured in the same run.
 *
 * Both paths are measured the same way (one load generator, keep-alive sockets, warmed up
 * first) in paired rounds: each round measures direct and swarm back to back, in an order
 * that alternates between rounds, and a round's result is the swarm-minus-direct difference
 * (or ratio) within it. The report gives the median round, so a burst of load from other
 * processes on this shared machine moves one round, not the result.
 */

const clients = 64;
/** Per client and phase; saturated phases are longer, as they pass ~10x faster. */
const requestsPerClient = 40;
const saturatedRequestsPerClient = 120;
/** Steady-load pacing per client; 64 clients at 100 ms is 640 requests/s. */
const paceMs = 100;
const steadyRate = Math.round((clients * 1000) / paceMs);
/** Odd, so the median is one measured round. */
const rounds = 5;
const cli = fileURLToPath(new URL("../bin/a3r.js", import.meta.url));

// The stub upstream: fixed answer, token ids and logprobs included for engines that want them.
const stubSource = `
const http = require("node:http");
const answer = JSON.stringify({
  id: "chatcmpl-stub", object: "chat.completion", created: 0, model: "stub",
  choices: [{ index: 0, message: { role: "assistant", content: "blue" }, finish_reason: "stop",
    logprobs: { content: [{ token: "token_id:7", logprob: -0.1, bytes: null, top_logprobs: [] }] } }],
  usage: { prompt_tokens: 12, completion_tokens: 1, total_tokens: 13 },
  prompt_token_ids: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
});
const server = http.createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    if (request.url.endsWith("/models")) { response.writeHead(200, { "content-type": "application/json" }); response.end(JSON.stringify({ object: "list", data: [{ id: "stub", object: "model" }] })); return; }
    if (request.url.endsWith("/tokenize")) { response.writeHead(200, { "content-type": "application/json" }); response.end(JSON.stringify({ tokens: [1, 2, 3], count: 3 })); return; }
    response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(answer) });
    response.end(answer);
  });
});
server.keepAliveTimeout = 65000;
server.listen(0, "127.0.0.1", () => process.stdout.write("stub ready on " + server.address().port + "\\n"));
`;

function startProcess(command: string[], readyPattern: RegExp): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = spawn(process.execPath, command, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, A3R_LOG_LEVEL: "error" } });
  let output = "";
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const match = readyPattern.exec(output);
      if (match) resolve({ child, match });
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("exit", (code) => reject(new Error(`process exited with ${code}: ${output}`)));
  });
}

function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? Number.NaN;
}

interface Phase {
  p50: number;
  p99: number;
  throughput: number;
}

/** One paired round: both paths under the same steady load, then both saturated. */
interface Round {
  steady: { direct: Phase; swarm: Phase };
  saturated: { direct: Phase; swarm: Phase };
  /** CPU µs per request of the swarm server and of the stub during the saturated swarm phase. */
  swarmCpuMicroseconds?: number;
  stubCpuMicroseconds?: number;
}

/**
 * CPU milliseconds a process has used (user + system, from /proc; Linux's clock tick is
 * 10 ms), or undefined elsewhere. Unlike requests/s, CPU per request hardly moves when
 * other processes compete for the cores, so it shows what the gateway itself costs.
 */
function cpuMilliseconds(pid: number | undefined): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/** One POST over a keep-alive agent; node:http keeps the load generator's own cost low. */
function post(agent: Agent, url: URL, apiKey: string, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: `${url.pathname}/chat/completions`,
        method: "POST",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), authorization: `Bearer ${apiKey}` },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString();
          if (response.statusCode === 200) resolve(text);
          else reject(new Error(`request failed (${response.statusCode}): ${text.slice(0, 300)}`));
        });
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}

/** The targets of one path, with its own keep-alive sockets, kept warm between phases. */
interface Path {
  targets: Array<{ url: string; apiKey: string }>;
  agent: Agent;
}

/**
 * 64 lanes, each sending its requests one after the other; latencies in ms. Without
 * `paceMs` each lane sends as fast as it gets answers (saturation: throughput); with it,
 * each lane sends one request every `paceMs` (a steady load: latency).
 */
async function phase({ targets, agent }: Path, paceMs?: number): Promise<Phase> {
  const body = JSON.stringify({
    model: "stub",
    messages: [
      { role: "system", content: "You name colours." },
      { role: "user", content: "What colour is the sky?" },
    ],
    max_tokens: 4,
  });
  const requestsPerClientNow = paceMs ? requestsPerClient : saturatedRequestsPerClient;
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    targets.map(async (target, lane) => {
      const url = new URL(target.url);
      // Lanes start spread over one pace period so the steady load has no bursts.
      const laneStart = started + (paceMs ? (paceMs * lane) / targets.length : 0);
      for (let index = 0; index < requestsPerClientNow; index += 1) {
        if (paceMs) {
          const due = laneStart + index * paceMs;
          const wait = due - performance.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        }
        const sent = performance.now();
        const answer = JSON.parse(await post(agent, url, target.apiKey, body)) as { choices?: unknown[] };
        if (!answer.choices) throw new Error(`not a chat completion: ${JSON.stringify(answer).slice(0, 300)}`);
        latencies.push(performance.now() - sent);
      }
    }),
  );
  const elapsedSeconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), throughput: latencies.length / elapsedSeconds };
}

const benchmark: Benchmark = {
  title: "swarm gateway: added latency and throughput vs direct upstream (64 concurrent clients)",
  async run(): Promise<BenchReport> {
    const directory = await mkdtemp(join(tmpdir(), "a3r-gateway-bench-"));
    const processes: ChildProcess[] = [];
    const agents: Agent[] = [];
    try {
      const stub = await startProcess(["-e", stubSource], /stub ready on (\d+)/);
      processes.push(stub.child);
      const upstream = `http://127.0.0.1:${stub.match[1]}/v1`;
      const configPath = join(directory, "swarm.yaml");
      await writeFile(
        configPath,
        [
          "model:",
          "  kind: openai-compatible",
          `  base_url: ${upstream}`,
          "  model: stub",
          "port: 0",
          "train_batch_size: 100000", // never trains: the bench measures the gateway only
          `max_env_worker: ${clients}`,
          `experiment_dir: ${join(directory, "experiment")}`,
          "limits:",
          // A warm-up, then a steady and a saturated phase per round go through the swarm.
          `  max_episode_calls: ${saturatedRequestsPerClient + (requestsPerClient + saturatedRequestsPerClient) * rounds}`,
        ].join("\n"),
      );
      const swarm = await startProcess([cli, "swarm", "serve", "--config", configPath], /swarm server ready on (http:\/\/\S+)/);
      processes.push(swarm.child);
      const client = new SwarmClient({ url: swarm.match[1]! });
      const episodes = await Promise.all(Array.from({ length: clients }, () => client.beginEpisode({ maxWaitMs: 30_000 })));
      // The same kind of keep-alive agent for both paths, one each, so neither borrows the other's sockets.
      const throughSwarm: Path = {
        targets: episodes.map((episode) => ({ url: episode.baseUrl, apiKey: episode.apiKey })),
        agent: new Agent({ keepAlive: true, maxSockets: clients }),
      };
      const direct: Path = { targets: episodes.map(() => ({ url: upstream, apiKey: "direct" })), agent: new Agent({ keepAlive: true, maxSockets: clients }) };
      agents.push(throughSwarm.agent, direct.agent);

      // Warm both paths (connections, JIT) the same way before anything is measured.
      await phase(direct);
      await phase(throughSwarm);
      const measured: Round[] = [];
      for (let round = 0; round < rounds; round += 1) {
        // Alternate which path goes first, so a drift in background load favours neither.
        const swarmFirst = round % 2 === 1;
        // Saturated swarm phases also measure the CPU the swarm server and the stub spend.
        const cpu: { swarm?: number; stub?: number } = {};
        const swarmPhase = async (paced?: number): Promise<Phase> => {
          if (paced) return phase(throughSwarm, paced);
          const before = [cpuMilliseconds(swarm.child.pid), cpuMilliseconds(stub.child.pid)];
          const result = await phase(throughSwarm);
          const after = [cpuMilliseconds(swarm.child.pid), cpuMilliseconds(stub.child.pid)];
          const perRequest = (index: number): number | undefined => {
            const [start, end] = [before[index], after[index]];
            return start === undefined || end === undefined ? undefined : ((end - start) * 1000) / (clients * saturatedRequestsPerClient);
          };
          cpu.swarm = perRequest(0);
          cpu.stub = perRequest(1);
          return result;
        };
        const pair = async (paced?: number): Promise<{ direct: Phase; swarm: Phase }> => {
          if (swarmFirst) {
            const swarmResult = await swarmPhase(paced);
            return { swarm: swarmResult, direct: await phase(direct, paced) };
          }
          const directResult = await phase(direct, paced);
          return { direct: directResult, swarm: await swarmPhase(paced) };
        };
        const steady = await pair(paceMs);
        const saturated = await pair();
        measured.push({
          steady,
          saturated,
          ...(cpu.swarm !== undefined ? { swarmCpuMicroseconds: cpu.swarm } : {}),
          ...(cpu.stub !== undefined ? { stubCpuMicroseconds: cpu.stub } : {}),
        });
      }
      for (const episode of episodes) await client.abortEpisode(episode.episodeUuid);
      const addedP50 = median(measured.map((round) => Math.max(0, round.steady.swarm.p50 - round.steady.direct.p50)));
      const addedP99 = median(measured.map((round) => Math.max(0, round.steady.swarm.p99 - round.steady.direct.p99)));
      const ratios = measured.map((round) => round.saturated.swarm.throughput / round.saturated.direct.throughput);
      const ratio = median(ratios);
      const saturatedAddedP50 = median(measured.map((round) => Math.max(0, round.saturated.swarm.p50 - round.saturated.direct.p50)));
      const swarmCpu = measured.flatMap((round) => (round.swarmCpuMicroseconds === undefined ? [] : [round.swarmCpuMicroseconds]));
      const stubCpu = measured.flatMap((round) => (round.stubCpuMicroseconds === undefined ? [] : [round.stubCpuMicroseconds]));
      const cpuRows =
        swarmCpu.length > 0 && stubCpu.length > 0
          ? [
              {
                name: "swarm server CPU per request (saturated)",
                value: Math.round(median(swarmCpu)),
                unit: "µs",
                goal: "<= 150",
                met: median(swarmCpu) <= 150,
              },
              { name: "stub CPU per request (saturated)", value: Math.round(median(stubCpu)), unit: "µs" },
            ]
          : [];
      const spread = (values: number[], digits: number): string => values.map((value) => value.toFixed(digits)).join(", ");
      return {
        title: benchmark.title,
        rows: [
          { name: `added p50 latency (steady ${steadyRate} req/s)`, value: addedP50, unit: "ms", goal: "<= 1", met: addedP50 <= 1 },
          { name: `added p99 latency (steady ${steadyRate} req/s)`, value: addedP99, unit: "ms", goal: "<= 5", met: addedP99 <= 5 },
          { name: "throughput ratio (swarm / direct, saturated)", value: ratio, goal: ">= 0.8", met: ratio >= 0.8 },
          { name: "direct p50 latency (steady)", value: median(measured.map((round) => round.steady.direct.p50)), unit: "ms" },
          { name: "swarm p50 latency (steady)", value: median(measured.map((round) => round.steady.swarm.p50)), unit: "ms" },
          { name: "direct p99 latency (steady)", value: median(measured.map((round) => round.steady.direct.p99)), unit: "ms" },
          { name: "swarm p99 latency (steady)", value: median(measured.map((round) => round.steady.swarm.p99)), unit: "ms" },
          { name: "added p50 latency (saturated)", value: saturatedAddedP50, unit: "ms" },
          { name: "direct throughput (saturated)", value: Math.round(median(measured.map((round) => round.saturated.direct.throughput))), unit: "req/s" },
          { name: "swarm throughput (saturated)", value: Math.round(median(measured.map((round) => round.saturated.swarm.throughput))), unit: "req/s" },
          ...cpuRows,
        ],
        notes: [
          `${clients} clients × ${requestsPerClient} requests per steady phase, × ${saturatedRequestsPerClient} per saturated one; median of ${rounds} paired rounds (direct and swarm back to back, order alternating); latency under a steady load (each client one request every ${paceMs} ms), throughput with every client sending back to back`,
          `per round: added p50 ${spread(
            measured.map((round) => round.steady.swarm.p50 - round.steady.direct.p50),
            2,
          )} ms; added p99 ${spread(
            measured.map((round) => round.steady.swarm.p99 - round.steady.direct.p99),
            1,
          )} ms; throughput ratio ${spread(ratios, 2)}`,
          "stub, swarm server and load generator are separate processes sharing this machine's cores: at saturation the swarm server competes with the load generator, so the ratio is a floor for a machine with a core to spare",
          ...(cpuRows.length > 0
            ? [
                `besides the load generator's share (the same for both paths), a request costs this machine about ${Math.round(median(swarmCpu) + median(stubCpu))} µs of CPU through the swarm against ${Math.round(median(stubCpu))} µs direct; while the cores are the limit, the throughput ratio cannot exceed what that difference allows`,
              ]
            : []),
        ],
      };
    } finally {
      for (const agent of agents) agent.destroy();
      for (const child of processes) child.kill("SIGKILL");
      await rm(directory, { recursive: true, force: true });
    }
  },
};

export default benchmark;
