import { describe, expect, it } from "vitest";
import { ClientActivity } from "./client-activity.ts";

describe("ClientActivity", () => {
  it("records only clients that ended a rewarded episode: invented uuids on the open endpoints leave nothing behind", () => {
    const activity = new ClientActivity(1000);
    for (let index = 0; index < 10_000; index += 1) activity.seen(`invented-${index}`, 0);
    expect(activity.size).toBe(0);
    activity.rewarded("real", 0);
    activity.agree("invented-1", 0);
    expect([activity.active(0), activity.agreed(), activity.size]).toEqual([["real"], [], 1]);
  });

  it("keeps a client active while it calls within the idle timeout, and forgets it after ten", () => {
    const activity = new ClientActivity(1000);
    activity.rewarded("a", 0);
    activity.rewarded("b", 0);
    activity.seen("a", 900);
    expect(activity.active(1500)).toEqual(["a"]);
    activity.agree("a", 1500);
    expect(activity.agreed()).toEqual(["a"]);
    activity.seen("a", 10_500);
    expect([activity.lastSeen("b"), activity.lastSeen("a")]).toEqual([undefined, 10_500]);
  });

  it("holds at most maxClients, forgetting the least recently seen", () => {
    const activity = new ClientActivity(1000, 3);
    for (const uuid of ["a", "b", "c"]) activity.rewarded(uuid, 0);
    activity.seen("a", 1);
    activity.rewarded("d", 2);
    expect(activity.size).toBe(3);
    expect(activity.active(2).sort()).toEqual(["a", "c", "d"]);
  });
});
