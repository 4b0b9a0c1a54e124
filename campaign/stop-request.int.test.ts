import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readStopRequest, stopRequestPath, writeStopRequest } from "./stop-request.ts";

describe("stop-request.json", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-stop-request-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("reads none, then the request written (twice, atomically: no temp file left)", async () => {
    expect(await readStopRequest(dir)).toEqual({ kind: "none" });
    const request = { state: "stopped_early" as const, reason: "rung 1: hopeless", evidence: { rung: 1, score: 0.1 } };
    await writeStopRequest(dir, request);
    await writeStopRequest(dir, request);
    expect(await readStopRequest(dir)).toEqual({ kind: "request", request });
    expect(await readdir(dir)).toEqual(["stop-request.json"]);
  });

  it.each([
    ["not JSON", "{", /is not JSON/],
    ["another state", '{"state": "succeeded", "reason": "x"}', /field state:/],
    ["no reason", '{"state": "stopped_early"}', /field reason:/],
    ["too large", `{"state": "stopped_early", "reason": "${"x".repeat(70_000)}"}`, /more than 65536/],
  ])("calls a file that is %s invalid, naming why", async (_, text, problem) => {
    await writeFile(stopRequestPath(dir), text);
    const read = await readStopRequest(dir);
    expect(read.kind).toBe("invalid");
    expect(read.kind === "invalid" && read.problem).toMatch(problem);
  });

  it("refuses to write a request that is not one", async () => {
    await expect(writeStopRequest(dir, { state: "stopped_early", reason: "", evidence: {} })).rejects.toThrow();
  });
});
