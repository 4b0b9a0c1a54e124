import { describe, expect, it } from "vitest";
import { Writable } from "node:stream";
import { createProgressReporter } from "./progress-reporter.ts";

function stream(isTTY: boolean) {
  const chunks: string[] = [];
  const sink = Object.assign(
    new Writable({
      write(chunk, _encoding, done) {
        chunks.push(String(chunk));
        done();
      },
    }),
    { isTTY },
  );
  return { sink, text: () => chunks.join("") };
}

const snapshot = { attempt: 1, step: 3, metricName: "reward_mean", metricValue: 0.5, elapsedMs: 1000, budgetMs: 10_000 };

describe("progress reporter", () => {
  it("rewrites one live line on a terminal and clears it before an event", () => {
    const out = stream(true);
    const reporter = createProgressReporter(out.sink);
    reporter.progress(snapshot);
    reporter.progress({ ...snapshot, step: 4 });
    reporter.event("attempt 1 failed");
    expect(out.text()).toBe(
      "\r\x1b[2Kattempt 1 step 3 reward_mean=0.5 [##------------------] 1s/10s\r\x1b[2Kattempt 1 step 4 reward_mean=0.5 [##------------------] 1s/10s\r\x1b[2Kattempt 1 failed\n",
    );
  });

  it("writes plain timestamped lines when piped, at most one per interval", () => {
    const out = stream(false);
    const reporter = createProgressReporter(out.sink, { plainEveryMs: 60_000 });
    reporter.progress(snapshot);
    reporter.progress({ ...snapshot, step: 4 });
    reporter.event("done");
    const lines = out.text().trimEnd().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT.* attempt 1 step 3 reward_mean=0.5/);
    expect(lines[1]).toMatch(/ done$/);
    expect(out.text()).not.toContain("\r");
  });
});
