import { describe, expect, it } from "vitest";
import { ChannelLimiter } from "./channel-limiter.ts";

describe("ChannelLimiter", () => {
  it("never runs more than its limit at once, runs every task, and keeps order of the waiting ones", async () => {
    const limiter = new ChannelLimiter(8);
    const started: number[] = [];
    let running = 0;
    let peak = 0;
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        limiter.run(async () => {
          started.push(index);
          running += 1;
          peak = Math.max(peak, running);
          await new Promise((resolve) => setTimeout(resolve, 5));
          running -= 1;
          return index * 2;
        }),
      ),
    );
    expect(results).toEqual(Array.from({ length: 30 }, (_, index) => index * 2));
    expect(peak).toBe(8);
    expect(limiter.peak).toBe(8);
    expect(started).toEqual(Array.from({ length: 30 }, (_, index) => index));
    expect(limiter.inUse).toBe(0);
  });

  it("frees the slot of a task that throws", async () => {
    const limiter = new ChannelLimiter(1);
    await expect(
      limiter.run(async () => {
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(await limiter.run(async () => "next")).toBe("next");
  });
});
