import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { campaignInvariantProblems, collectCampaignEvidence, eventsOf } from "../../test-support/campaign-evidence.ts";
import { fastTopicBlueprintIds, writeFastTopic } from "../../test-support/fast-topic.ts";
import { rayMissing, startRayCluster, type RayClusterHandle } from "../../test-support/ray-cluster.ts";
import { a3rEntry, runA3r, withoutModelSettings } from "../../test-support/run-cli.ts";
import { slowTests, slowTierNote } from "../../test-support/slow-tests.ts";

/**
 * A whole campaign through `a3r research --hosts` whose only host is a real Ray head
 * (test-support/ray-cluster.ts): the leader places every run as a Ray actor, follows it,
 * fetches its result directory and writes the report. While stage 1 runs, one run's Ray
 * worker process (its actor) is SIGKILLed, and then the leader (and with it its Ray
 * driver); `a3r resume` finishes the campaign: every run completes, each with one trainer
 * start and one worker, nothing placed twice.
 */
const missing = rayMissing();

describe.skipIf(missing !== undefined || !slowTests)(`a campaign on a Ray host${missing ? ` (skipped: ${missing})` : slowTierNote}`, () => {
  let ray: RayClusterHandle;
  let dir: string;

  beforeAll(async () => {
    ray = await startRayCluster({ cpus: 4 });
    dir = await mkdtemp(join(tmpdir(), "a3r-ray-campaign-"));
  }, 120_000);
  afterAll(async () => {
    await ray?.stop();
    await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it("runs to its report through a killed Ray worker process and a killed leader, every run complete with one trainer start", async () => {
    const runsDir = join(dir, "runs");
    const workdir = join(dir, "shared");
    const hostsFile = join(dir, "hosts.yaml");
    await writeFile(
      hostsFile,
      [
        "hosts:",
        "  - name: raycluster",
        "    kind: ray",
        `    address: "${ray.address}"`,
        `    python: ${ray.python}`,
        "    cpus_per_run: 1",
        `    workdir: ${workdir}`,
        "",
      ].join("\n"),
    );
    // Runs of a few seconds, so the kills land while stage 1 is running.
    const topic = await writeFastTopic({ dir: await mkdtemp(join(dir, "topic-")), steps: 12, stepMs: 400 });
    const leader = spawn(process.execPath, [a3rEntry, "research", topic, "--runs-dir", runsDir, "--hosts", hostsFile, "--campaign", "on-ray"], {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...withoutModelSettings(process.env), NO_COLOR: "1" },
    });
    let stderr = "";
    leader.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise((resolveExit) => leader.once("exit", resolveExit));
    // One run's actor, once its worker has started a step: its Ray worker process is killed.
    const victim = join(workdir, "on-ray", fastTopicBlueprintIds[0]![0]!);
    const deadline = Date.now() + 120_000;
    let actorPid: number | undefined;
    while (actorPid === undefined && Date.now() < deadline) {
      const started = await readFile(join(victim, "ray-starts.jsonl"), "utf8").catch(() => "");
      const metrics = await readFile(join(victim, "result", "metrics.jsonl"), "utf8").catch(() => "");
      if (started && metrics.trim()) actorPid = (JSON.parse(started.split("\n")[0]!) as { actor_pid: number }).actor_pid;
      else await new Promise((resolveWait) => setTimeout(resolveWait, 200));
    }
    expect(actorPid, stderr).toBeDefined();
    process.kill(actorPid!, "SIGKILL");
    leader.kill("SIGKILL");
    await exited;

    // The campaign remembers its hosts file: resume follows the same Ray actors by name.
    const resume = await runA3r(["resume", "on-ray", "--runs-dir", runsDir], { timeoutMs: 240_000 });
    expect(resume.code, resume.stderr).toBe(0);
    expect(resume.stdout.trim()).toBe(`report: ${join(runsDir, "on-ray", "report.md")}`);
    expect((await stat(join(runsDir, "on-ray", "report.md"))).isFile()).toBe(true);

    const evidence = await collectCampaignEvidence(runsDir, "on-ray");
    // Launch records live on the Ray workdir, not the local host's folder the evidence reads.
    expect(campaignInvariantProblems(evidence).filter((problem) => !problem.endsWith("no launch record on the host"))).toEqual([]);
    expect(Object.values(evidence.stages).flat().sort()).toEqual(fastTopicBlueprintIds.flat().slice().sort());
    expect(eventsOf(evidence, "run.dispatched").every((event) => event.host === "raycluster")).toBe(true);
    for (const id of fastTopicBlueprintIds.flat()) {
      const starts = (await readFile(join(workdir, "on-ray", id, "ray-starts.jsonl"), "utf8")).trim().split("\n");
      const lines = starts.map((line) => JSON.parse(line) as { kind: string; restarted: boolean });
      const kinds = lines.map((line) => line.kind);
      // One worker per run; the killed actor's successor adopted it instead of starting another.
      expect(
        kinds.filter((kind) => kind === "started"),
        id,
      ).toHaveLength(1);
      // The successor adopted the worker, or (on a loaded machine Ray's restart can take
      // longer than the run's last seconds) found it finished: either way Ray restarted it.
      if (id === fastTopicBlueprintIds[0]![0])
        expect(lines.slice(1).map((line) => [line.kind, line.restarted])).toEqual([[expect.stringMatching(/^(adopted|finished-already)$/), true]]);
    }
  }, 420_000);
});
