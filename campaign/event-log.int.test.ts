import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { appendFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { appendEvent, EventLog, readEvents } from "./event-log.ts";

const run = promisify(execFile);
const runTs = new URL("../bin/run-ts.js", import.meta.url).pathname;
const appendProgram = new URL("./__fixtures__/programs/append-events.ts", import.meta.url).pathname;

let dir: string;
let path: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "a3r-events-"));
  path = join(dir, "events.jsonl");
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("event log", () => {
  it("appends one {time, kind, ...evidence} object per line and reads them back", async () => {
    const log = new EventLog(path);
    await log.append("campaign.created", { campaignId: "demo" });
    await log.append("blueprint.skipped", { blueprintId: "s1-b", reason: "diverged in smoke test", evidence: ["results/s1-a/metrics.jsonl"] });
    const text = await readFile(path, "utf8");
    expect(text.split("\n")).toHaveLength(3);
    const { events, problems, lines } = await log.read();
    expect(problems).toEqual([]);
    expect(lines).toEqual([1, 2]);
    expect(events[1]).toMatchObject({ kind: "blueprint.skipped", blueprintId: "s1-b", evidence: ["results/s1-a/metrics.jsonl"] });
    expect(Date.parse(events[0]!.time)).not.toBeNaN();
  });

  it("never lets evidence overwrite the time or kind of an event", async () => {
    const event = await appendEvent(path, "run.launched", { time: "1999-01-01T00:00:00.000Z", kind: "forged" } as never);
    expect(event.kind).toBe("run.launched");
    expect(event.time).not.toBe("1999-01-01T00:00:00.000Z");
  });

  it("refuses a kind that is not a lowercase dotted name", async () => {
    await expect(appendEvent(path, "Blueprint Skipped")).rejects.toThrow(/kind/);
  });

  it("keeps 300 concurrent appends of one process whole and in order of call", async () => {
    await Promise.all(Array.from({ length: 300 }, (_, index) => appendEvent(path, "test.appended", { index })));
    const { events, problems } = await readEvents(path);
    expect(problems).toEqual([]);
    expect(events.map((event) => event.index)).toEqual(Array.from({ length: 300 }, (_, index) => index));
  });

  // After a crash mid-append the log must stay usable: the torn line is reported, the rest kept.
  it("tolerates a torn last line, reports it, and starts the next append on a fresh line", async () => {
    await appendEvent(path, "run.launched", { attempt: 1 });
    await appendFile(path, '{"time":"2026-11-29T10:00:00.000Z","kind":"run.sig');
    const torn = await readEvents(path);
    expect(torn.events).toHaveLength(1);
    expect(torn.problems).toEqual([expect.objectContaining({ line: 2, code: "LINE_TORN", torn: true })]);

    await appendEvent(path, "run.recovered", { attempt: 2 });
    const after = await readEvents(path);
    expect(after.events.map((event) => event.kind)).toEqual(["run.launched", "run.recovered"]);
    expect(after.problems).toEqual([expect.objectContaining({ line: 2, code: "LINE_NOT_JSON" })]);
  });

  it("reports a corrupt middle line with its number and keeps the lines around it", async () => {
    await writeFile(
      path,
      [
        '{"time":"2026-11-29T10:00:00.000Z","kind":"a.one"}',
        "garbage {",
        '{"time":"2026-11-29T10:00:01.000Z","kind":"a.two"}',
        '{"kind":"a.three"}',
        '{"time":"2026-11-29T10:00:02.000Z","kind":"a.four"}',
        "",
      ].join("\n"),
    );
    const { events, problems } = await readEvents(path);
    expect(events.map((event) => event.kind)).toEqual(["a.one", "a.two", "a.four"]);
    expect(problems.map((problem) => [problem.line, problem.code])).toEqual([
      [2, "LINE_NOT_JSON"],
      [4, "EVENT_INVALID"],
    ]);
  });

  it("reads a missing log as empty", async () => {
    expect(await readEvents(join(dir, "none.jsonl"))).toEqual({ events: [], lines: [], problems: [] });
  });

  it("does not interleave lines appended by several processes at once", async () => {
    const writers = ["alpha", "bravo", "charlie", "delta"];
    await Promise.all(writers.map((writer) => run(process.execPath, [runTs, appendProgram, path, writer, "150", "2000"])));
    const { events, problems } = await readEvents(path);
    expect(problems).toEqual([]);
    expect(events).toHaveLength(writers.length * 150);
    for (const writer of writers) {
      const mine = events.filter((event) => event.writer === writer);
      expect(mine).toHaveLength(150);
      expect(mine.every((event) => typeof event.padding === "string" && event.padding.length === 2000 && event.padding.startsWith(writer))).toBe(true);
    }
  });
});
