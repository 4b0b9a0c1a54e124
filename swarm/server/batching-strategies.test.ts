import { describe, expect, it } from "vitest";
import { decideBatch, type PoolEpisode, type StrategyInput } from "./batching-strategies.ts";

let sequence = 0;
function episode(taskId: string, reward: number, id?: string): PoolEpisode {
  sequence += 1;
  return { episodeUuid: id ?? `${taskId}-${sequence}`, taskId, reward, sequence };
}

function input(method: StrategyInput["method"], episodes: PoolEpisode[], extra: Partial<StrategyInput> = {}): StrategyInput {
  return { method, trainBatchSize: 2, numRepeat: 2, episodes, activeClients: [], agreedClients: [], ...extra };
}

describe("C1 rollout_until_finish_enough_episodes", () => {
  it("waits for B×N episodes, then takes exactly the first B×N and leaves the rest", () => {
    const pool = [episode("a", 1), episode("b", 0), episode("c", 1)];
    expect(decideBatch(input("rollout_until_finish_enough_episodes", pool)).ready).toBe(false);
    pool.push(episode("d", 0), episode("e", 1));
    const decision = decideBatch(input("rollout_until_finish_enough_episodes", [...pool].reverse()));
    expect(decision.ready).toBe(true);
    expect(decision.selected).toEqual(pool.slice(0, 4).map((e) => e.episodeUuid));
    expect(decision.progress.completed_episode_target).toBe(4);
  });
});

describe("C2 rollout_until_finish_enough_tasks", () => {
  it("counts only tasks with N episodes and selects exactly N of each of the first B", () => {
    const a1 = episode("a", 1),
      b1 = episode("b", 0),
      a2 = episode("a", 0),
      a3 = episode("a", 1),
      c1 = episode("c", 1);
    let decision = decideBatch(input("rollout_until_finish_enough_tasks", [a1, b1, a2, a3, c1]));
    expect(decision.ready).toBe(false);
    expect(decision.progress.completed_tasks).toBe(1);
    expect(decision.progress.fraction).toBe(0.5);
    const c2 = episode("c", 1),
      b2 = episode("b", 1);
    decision = decideBatch(input("rollout_until_finish_enough_tasks", [a1, b1, a2, a3, c1, c2, b2]));
    expect(decision.ready).toBe(true);
    // a completed first, then c (its 2nd episode came before b's): a3 and b* are leftovers.
    expect(decision.selected).toEqual([a1, a2, c1, c2].map((e) => e.episodeUuid));
    expect(decision.discarded).toEqual([]);
    // A task with 2N episodes still counts once, and gives its earliest group only.
    const a4 = episode("a", 1);
    decision = decideBatch(input("rollout_until_finish_enough_tasks", [a1, a2, a3, a4, b1]));
    expect(decision.ready).toBe(false);
    expect(decision.progress.completed_tasks).toBe(1);
  });
});

describe("C3 rollout_until_finish_enough_non_dummy_tasks", () => {
  it("skips groups whose rewards are all equal and discards them as soon as they are complete", () => {
    const pool = [episode("d", 1), episode("d", 1), episode("x", 0), episode("x", 1)];
    let decision = decideBatch(input("rollout_until_finish_enough_non_dummy_tasks", pool));
    expect(decision.ready).toBe(false);
    expect(decision.progress.completed_tasks).toBe(2);
    expect(decision.progress.completed_non_dummy_tasks).toBe(1);
    expect(decision.discarded).toEqual([pool[0]!, pool[1]!].map((e) => e.episodeUuid));
    pool.push(episode("y", 0.5), episode("late-dummy", 0), episode("y", 0.25), episode("late-dummy", 0));
    decision = decideBatch(input("rollout_until_finish_enough_non_dummy_tasks", pool));
    expect(decision.ready).toBe(true);
    expect(decision.selected).toEqual([pool[2]!, pool[3]!, pool[4]!, pool[6]!].map((e) => e.episodeUuid));
    expect(decision.discarded).toEqual([pool[0]!, pool[1]!, pool[5]!, pool[7]!].map((e) => e.episodeUuid));
  });

  it("lets a task whose first group was dummy qualify with its next group", () => {
    // Many episodes of one task id (a small task space): the first N all failed, the next N did not.
    const pool = [episode("apple", 0), episode("apple", 0), episode("apple", 1), episode("apple", 0), episode("sky", 1), episode("sky", 0)];
    const decision = decideBatch(input("rollout_until_finish_enough_non_dummy_tasks", pool));
    expect(decision.ready).toBe(true);
    expect(decision.selected).toEqual([pool[2]!, pool[3]!, pool[4]!, pool[5]!].map((e) => e.episodeUuid));
    expect(decision.discarded).toEqual([pool[0]!, pool[1]!].map((e) => e.episodeUuid));
  });
});

describe("C4 rollout_until_all_clients_agree_sync_weight", () => {
  it("needs every active client to agree, and a non-empty pool", () => {
    const pool = [episode("a", 1), episode("b", 0), episode("c", 1)];
    const base = { activeClients: ["c1", "c2"] };
    expect(decideBatch(input("rollout_until_all_clients_agree_sync_weight", pool, { ...base, agreedClients: ["c1"] })).ready).toBe(false);
    expect(decideBatch(input("rollout_until_all_clients_agree_sync_weight", [], { ...base, agreedClients: ["c1", "c2"] })).ready).toBe(false);
    const decision = decideBatch(input("rollout_until_all_clients_agree_sync_weight", pool, { ...base, agreedClients: ["c2", "c1", "gone"] }));
    expect(decision.ready).toBe(true);
    expect(decision.selected).toEqual(pool.map((e) => e.episodeUuid));
  });
});

describe("C5 rollout_until_any_client_agrees_sync_weight", () => {
  it("is ready as soon as one active client agrees; inactive clients do not count", () => {
    const pool = [episode("a", 1)];
    expect(decideBatch(input("rollout_until_any_client_agrees_sync_weight", pool, { activeClients: ["c1"], agreedClients: ["stranger"] })).ready).toBe(false);
    const decision = decideBatch(input("rollout_until_any_client_agrees_sync_weight", pool, { activeClients: ["c1", "c2"], agreedClients: ["c2"] }));
    expect(decision.ready).toBe(true);
    expect(decision.progress.agreed_clients).toBe(1);
  });
});

describe("per-client task ratios (clientTaskQuotas)", () => {
  const by = (client: string, taskId: string, reward: number): PoolEpisode => ({ ...episode(taskId, reward), clientUuid: client });

  it("takes at most each client's quota of the B tasks, leaving its extra groups for a later step", () => {
    // B = 4 at 3:1: the math client may fill 3 tasks, the code client 1.
    const quotas = new Map([
      ["math", 3],
      ["code", 1],
    ]);
    const pool = [
      ...["m1", "m2", "m3", "m4", "m5"].flatMap((task) => [by("math", task, 1), by("math", task, 0)]),
      ...["c1"].flatMap((task) => [by("code", task, 1), by("code", task, 0)]),
    ];
    const decision = decideBatch(input("rollout_until_finish_enough_tasks", pool, { trainBatchSize: 4, clientTaskQuotas: quotas }));
    expect(decision.ready).toBe(true);
    const tasks = new Set(pool.filter((e) => decision.selected.includes(e.episodeUuid)).map((e) => e.taskId));
    expect([...tasks].sort()).toEqual(["c1", "m1", "m2", "m3"]);
    // Without the code client's task, the math client's fourth and fifth tasks never fill the batch.
    const mathOnly = pool.filter((e) => e.clientUuid === "math");
    expect(decideBatch(input("rollout_until_finish_enough_tasks", mathOnly, { trainBatchSize: 4, clientTaskQuotas: quotas })).ready).toBe(false);
    // Without quotas the same pool is ready at once.
    expect(decideBatch(input("rollout_until_finish_enough_tasks", mathOnly, { trainBatchSize: 4 })).ready).toBe(true);
  });

  it("lets clients without a quota fill what the quotas leave (C3 too)", () => {
    const quotas = new Map([["math", 1]]);
    const pool = [by("math", "m1", 1), by("math", "m1", 0), by("math", "m2", 1), by("math", "m2", 0), by("free", "f1", 1), by("free", "f1", 0)];
    const decision = decideBatch(input("rollout_until_finish_enough_non_dummy_tasks", pool, { trainBatchSize: 2, clientTaskQuotas: quotas }));
    expect(decision.ready).toBe(true);
    expect(new Set(pool.filter((e) => decision.selected.includes(e.episodeUuid)).map((e) => e.taskId))).toEqual(new Set(["m1", "f1"]));
  });
});
