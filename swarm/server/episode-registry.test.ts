import { describe, expect, it } from "vitest";
import { EpisodeRegistry } from "./episode-registry.ts";

function claimed(registry: EpisodeRegistry, now = 0, discardTimeoutMs = 1000) {
  const result = registry.claim({ clientUuid: "c1", type: "train", discardTimeoutMs, step: 3 }, now);
  if (!result.ok) throw new Error(result.failCause);
  return result.episode;
}

describe("EpisodeRegistry", () => {
  it("gives each claim its own key and revokes it the moment the episode ends", () => {
    const registry = new EpisodeRegistry({ maxConcurrentEpisodes: 4, maxHistory: 10 });
    const first = claimed(registry);
    const second = claimed(registry);
    expect(first.apiKey).not.toBe(second.apiKey);
    expect(registry.byApiKey(first.apiKey)).toBe(first);
    registry.finish(first.episodeUuid, "ended", "rewarded");
    expect(registry.byApiKey(first.apiKey)).toBeUndefined();
    expect(registry.find(first.episodeUuid)?.status).toBe("ended");
    expect(registry.byApiKey(second.apiKey)).toBe(second);
    expect(registry.counters.ended).toBe(1);
  });

  it("refuses claims past the concurrency cap with a cause, and accepts again after one ends", () => {
    const registry = new EpisodeRegistry({ maxConcurrentEpisodes: 2, maxHistory: 10 });
    const first = claimed(registry);
    claimed(registry);
    const refused = registry.claim({ clientUuid: "c2", type: "eval", discardTimeoutMs: 10, step: 0 });
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.failCause).toContain("max_env_worker");
    registry.finish(first.episodeUuid, "aborted", "client aborted");
    expect(registry.claim({ clientUuid: "c2", type: "eval", discardTimeoutMs: 10, step: 0 }).ok).toBe(true);
  });

  it("reclaims idle episodes but never one with a call in flight", () => {
    const registry = new EpisodeRegistry({ maxConcurrentEpisodes: 4, maxHistory: 10 });
    const idle = claimed(registry, 0, 1000);
    const busy = claimed(registry, 0, 1000);
    const fresh = claimed(registry, 0, 1000);
    busy.inFlight = 1;
    registry.touch(fresh, 900);
    const reclaimed = registry.reclaimIdle(1500);
    expect(reclaimed.map((episode) => episode.episodeUuid)).toEqual([idle.episodeUuid]);
    expect(registry.byApiKey(idle.apiKey)).toBeUndefined();
    expect(registry.find(idle.episodeUuid)?.closeReason).toContain("idle");
    expect(registry.runningCount).toBe(2);
  });

  it("keeps a bounded history and counts what it drops", () => {
    const registry = new EpisodeRegistry({ maxConcurrentEpisodes: 10, maxHistory: 2 });
    const episodes = [claimed(registry), claimed(registry), claimed(registry)];
    for (const episode of episodes) registry.finish(episode.episodeUuid, "ended", "done");
    expect(registry.historyEpisodes()).toHaveLength(2);
    expect(registry.find(episodes[0]!.episodeUuid)).toBeUndefined();
    expect(registry.counters.droppedFromHistory).toBe(1);
  });

  it("closes every running episode on demand", () => {
    const registry = new EpisodeRegistry({ maxConcurrentEpisodes: 10, maxHistory: 10 });
    const a = claimed(registry);
    claimed(registry);
    expect(registry.closeAll("engine stopped")).toHaveLength(2);
    expect(registry.runningCount).toBe(0);
    expect(registry.byApiKey(a.apiKey)).toBeUndefined();
  });
});

describe("EpisodeRegistry per-client cap", () => {
  it("refuses one client past max_claims_per_client while others still claim, and frees the slot on finish", () => {
    const registry = new EpisodeRegistry({ maxConcurrentEpisodes: 10, maxHistory: 10, maxPerClient: 2 });
    const first = claimed(registry);
    claimed(registry);
    const refused = registry.claim({ clientUuid: "c1", type: "train", discardTimeoutMs: 10, step: 0 });
    expect(refused).toMatchObject({ ok: false, perClientCap: true });
    if (!refused.ok) expect(refused.failCause).toContain("max_claims_per_client reached: this client_uuid already holds 2 running episodes (cap 2)");
    expect(registry.claim({ clientUuid: "c2", type: "train", discardTimeoutMs: 10, step: 0 }).ok).toBe(true);
    expect(registry.runningCountOf("c1")).toBe(2);
    registry.finish(first.episodeUuid, "aborted", "test");
    expect(registry.runningCountOf("c1")).toBe(1);
    expect(registry.claim({ clientUuid: "c1", type: "train", discardTimeoutMs: 10, step: 0 }).ok).toBe(true);
  });
});
