import { describe, expect, it } from "vitest";
import type { CampaignEvent } from "../../campaign/index.ts";
import { answerKeyIn, eventsOfCurrentRound, openRoundOf, pendingReopen, reopenRefusal, stoppedMs } from "./reopen.ts";

const event = (kind: string, time: string, fields: Record<string, unknown> = {}): CampaignEvent =>
  ({ kind, time: `2026-11-29T${time}:00.000Z`, ...fields }) as CampaignEvent;

describe("open rounds of a re-opened campaign", () => {
  const log = [
    event("campaign.created", "10:00"),
    event("campaign.stop_decided", "10:30", { reason: "budget", openRound: 0 }),
    event("campaign.reported", "10:31", { openRound: 0 }),
    event("campaign.reopened", "12:31", { openRound: 1, checkpoint: "c1" }),
    event("stage.planned", "12:32", { stage: 2 }),
  ];

  it("counts re-openings, and keys answers by round after the first", () => {
    expect(openRoundOf(log.slice(0, 3))).toBe(0);
    expect(openRoundOf(log)).toBe(1);
    expect(answerKeyIn("decide-1-r0", 0)).toBe("decide-1-r0");
    expect(answerKeyIn("decide-1-r0", 2)).toBe("decide-1-r0-o2");
    expect(eventsOfCurrentRound(log).map((item) => item.kind)).toEqual(["stage.planned"]);
  });

  it("knows a re-opening that has not reported yet, and forgets it once its round reported", () => {
    expect(pendingReopen(log)).toEqual({ checkpointId: "c1", openRound: 1 });
    expect(pendingReopen([...log, event("campaign.reported", "13:00", { openRound: 1 })])).toBeNull();
    expect(pendingReopen(log.slice(0, 3))).toBeNull();
  });

  it("leaves the time the campaign lay stopped out of its wall time", () => {
    // Reported at 10:31, re-opened at 12:31: two hours stopped; the second round still runs.
    expect(stoppedMs(log)).toBe(2 * 3_600_000);
    expect(
      stoppedMs([...log, event("campaign.reported", "13:00", { openRound: 1 }), event("campaign.reopened", "13:30", { openRound: 2, checkpoint: "c2" })]),
    ).toBe(2.5 * 3_600_000);
    // A clock that started at 12:00 (framing was refused in round 0) loses only the 31 minutes after it.
    expect(stoppedMs(log, Date.parse("2026-11-29T12:00:00.000Z"))).toBe(31 * 60_000);
    expect(stoppedMs(log, Date.parse("2026-11-29T12:40:00.000Z"))).toBe(0);
  });

  it("re-opens budget stops only", () => {
    expect(reopenRefusal({ reason: "budget", explanation: "stage 3 would exceed the budget of 2 stage(s)" })).toBeNull();
    expect(reopenRefusal({ reason: "no-improvement", explanation: "stage 2 brought nothing" })).toMatch(/^it stopped for no-improvement/);
    expect(reopenRefusal(null)).toMatch(/without a stop decision/);
  });
});
