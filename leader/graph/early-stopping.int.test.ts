import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readBlueprintFile } from "../../blueprints/index.ts";
import { appendMetrics, readEvents } from "../../campaign/index.ts";
import { isGroupAlive } from "../../core/process-group.ts";
import type { DispatchHost, DispatchItem, DispatchRow } from "../../hosts/index.ts";
import { LocalLauncher } from "../../hosts/local/local-launcher.ts";
import { fixtureA3rCommand, writeFixtureBlueprint } from "../../test-support/fixture-blueprint.ts";
import { waitForProgress } from "../../test-support/launcher-conformance.ts";
import type { StagePlan } from "../domain/planner.ts";
import { parseTopic } from "../domain/topic.ts";
import { createEarlyStopper } from "./early-stopping.ts";

/**
 * The watch node's early stopping against a real local host: a live run (the fixture
 * worker, a process) far below a finished one at the rung is asked to stop and ends
 * `stopped_early`; the stop is one event, and neither a second round nor a restarted
 * leader (a new stopper over the same events) asks again.
 */
describe("early stopping between dispatcher rounds", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-early-stopping-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("stops the hopeless live run once, through its host, and stays idempotent after a restart", async () => {
    const campaign = "es";
    const launcher = new LocalLauncher({ host: "here", workdir: join(dir, "host"), a3r: fixtureA3rCommand });
    const hosts = [{ config: { name: "here", kind: "local" }, launcher, capacity: { host: "here", gpus: [], maxRuns: 2 } }] as unknown as DispatchHost[];
    const item = async (id: string, steps: number): Promise<DispatchItem> => {
      const file = await writeFixtureBlueprint(dir, { id, campaign, steps, stepMs: 50 });
      const blueprint = await readBlueprintFile(file);
      // Rungs are fractions of max_steps: 200 here, so rung 1 (5%) is step 10.
      blueprint.frontMatter.overrides = { max_steps: 200 };
      return { blueprint, file, campaign, resultDir: join(dir, "results", id) };
    };
    const good = await item("s1-good-seed1", 20);
    const next = await item("s1-next-seed1", 20);
    const bad = await item("s1-bad-seed1", 400);
    // The good and next runs finished earlier at 0.9 and 0.8 (a rung keeps two configurations
    // at least); the bad one (the fixture's reward is step/400) runs now.
    for (const [finished, level] of [
      [good, 0.9],
      [next, 0.8],
    ] as const) {
      await mkdir(finished.resultDir, { recursive: true });
      for (let step = 1; step <= 20; step += 1) await appendMetrics(join(finished.resultDir, "metrics.jsonl"), { step, reward_mean: level });
    }
    await launcher.launch({ campaign, blueprintId: bad.blueprint.id, blueprintFile: bad.file, gpuIndices: [], resultDir: bad.resultDir });
    const ref = { campaign, blueprintId: bad.blueprint.id };
    await waitForProgress(launcher, ref, (progress) => (progress.step ?? 0) >= 10);

    const topic = parseTopic(
      "---\nmetric: { name: reward_mean, goal: maximize }\nknobs: { lr: [1, 2] }\nearly_stop: { rungs: [0.05, 0.5], keep: 0.5 }\n---\nq\n",
    );
    const plan = {
      stage: 1,
      experiments: [
        { blueprintId: good.blueprint.id, configurationId: "good", seed: 1 },
        { blueprintId: next.blueprint.id, configurationId: "next", seed: 1 },
        { blueprintId: bad.blueprint.id, configurationId: "bad", seed: 1 },
      ],
    } as unknown as StagePlan;
    const eventsFile = join(dir, "events.jsonl");
    const row = (blueprintId: string, state: DispatchRow["state"], finished: boolean): DispatchRow => ({
      campaign,
      blueprintId,
      host: "here",
      state,
      finished,
      gpuIndices: [],
      step: null,
      startedAt: null,
      timeBudgetMs: 60_000,
      lastMetrics: null,
      note: "",
      auditErrors: finished ? 0 : null,
    });
    const input = { topic, plan, items: [good, next, bad], hosts, eventsFile };
    const stopper = (await createEarlyStopper(input))!;
    const rows = [row(good.blueprint.id, "succeeded", true), row(next.blueprint.id, "succeeded", true), row(bad.blueprint.id, "running", false)];
    await stopper(rows);
    await stopper(rows);

    const stops = async () => (await readEvents(eventsFile)).events.filter((event) => event.kind === "run.stopped_early");
    expect(await stops()).toHaveLength(1);
    expect((await stops())[0]).toMatchObject({ blueprintId: bad.blueprint.id, requested: true, rung: 1, rungStep: 10, bestConfiguration: "good" });
    const ended = await waitForProgress(launcher, ref, (progress) => progress.finished);
    expect(ended.state).toBe("stopped_early");
    expect(ended.reason).toContain("rung 1 of 2 (5% of max_steps = step 10 of 200)");
    expect(ended.step).toBeLessThan(400);
    // The worker writes its last lines after finish.flag: the folder is removed once it is gone.
    const pgid = (await launcher.readMarker(ref))!.pgid!;
    const deadline = Date.now() + 30_000;
    while (isGroupAlive(pgid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));

    // A restarted leader: a new stopper reads the stop back from the events and asks nothing.
    const restarted = (await createEarlyStopper(input))!;
    await restarted([row(good.blueprint.id, "succeeded", true), row(next.blueprint.id, "succeeded", true), row(bad.blueprint.id, "stopped_early", true)]);
    expect(await stops()).toHaveLength(1);
    const rungs = (await readEvents(eventsFile)).events.filter((event) => event.kind === "stage.rung_decided");
    expect(rungs.map((event) => [event.rung, event.cut])).toEqual([[1, ["bad"]]]);
  });

  it("leaves a replication stage's runs alone: they exist to be measured to the end", async () => {
    const topic = parseTopic("---\nmetric: { name: reward_mean, goal: maximize }\nearly_stop: { rungs: [0.25], keep: 0.5 }\n---\nq\n");
    const plan = (kind: StagePlan["kind"]) => ({ stage: 2, kind, experiments: [] }) as unknown as StagePlan;
    const stopper = (kind: StagePlan["kind"]) => createEarlyStopper({ topic, plan: plan(kind), items: [], hosts: [], eventsFile: join(dir, `${kind}.jsonl`) });
    expect(await stopper("replicate")).toBeUndefined();
    expect(await stopper("refine")).toBeTypeOf("function");
  });

  it("is absent for a topic without early_stop", async () => {
    const topic = parseTopic("---\nmetric: { name: reward_mean, goal: maximize }\n---\nq\n");
    expect(
      await createEarlyStopper({
        topic,
        plan: { stage: 1, experiments: [] } as unknown as StagePlan,
        items: [],
        hosts: [],
        eventsFile: join(dir, "none.jsonl"),
      }),
    ).toBeUndefined();
  });
});
