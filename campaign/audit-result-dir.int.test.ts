import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendFile, cp, link, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { auditResultDir } from "./audit-result-dir.ts";
import type { Finding } from "./finding.ts";

const fixtures = new URL("./__fixtures__/result-dirs/", import.meta.url).pathname;
const consistent = join(fixtures, "consistent");
const inconsistent = join(fixtures, "inconsistent");

let dir: string;
beforeEach(async () => {
  const parent = await mkdtemp(join(tmpdir(), "a3r-audit-result-"));
  dir = join(parent, "run");
  await cp(consistent, dir, { recursive: true });
});
afterEach(async () => {
  await rm(join(dir, ".."), { recursive: true, force: true });
});

const codes = (findings: Finding[]) => findings.map((finding) => `${finding.severity} ${finding.code}`);

async function writeStatus(fields: Record<string, unknown>): Promise<void> {
  const base = {
    state: "running",
    attempt: 1,
    host: "gpu-01",
    pid: 42,
    pgid: 42,
    startedAt: "2026-11-29T09:00:00.000Z",
    heartbeatAt: "2026-11-29T09:58:00.000Z",
    step: 300,
    lastMetrics: null,
    reason: null,
  };
  await writeFile(join(dir, "status.json"), `${JSON.stringify({ ...base, ...fields }, null, 2)}\n`);
}

describe("result directory audit", () => {
  it("finds nothing wrong with the consistent fixture", async () => {
    expect(await auditResultDir(consistent)).toEqual([]);
  });

  it("reports a finish.flag that says succeeded while status.json says running", async () => {
    const findings = await auditResultDir(inconsistent);
    expect(codes(findings)).toEqual(["error FINISH_FLAG_MISMATCH"]);
    expect(findings[0]).toMatchObject({ file: join(inconsistent, "finish.flag"), line: 1 });
    expect(findings[0]?.message).toContain("succeeded");
    expect(findings[0]?.message).toContain("running");
    expect(findings[0]?.hint).not.toBe("");
  });

  it("requires blueprint.md and status.json, and result.md and finish.flag once finished", async () => {
    await rm(join(dir, "blueprint.md"));
    await rm(join(dir, "result.md"));
    await rm(join(dir, "finish.flag"));
    const findings = await auditResultDir(dir);
    expect(codes(findings).sort()).toEqual(["error FINISH_FLAG_MISSING", "error RESULT_FILE_MISSING", "error RESULT_FILE_MISSING"]);
    expect(findings.map((finding) => finding.file)).toEqual(
      expect.arrayContaining([join(dir, "blueprint.md"), join(dir, "result.md"), join(dir, "finish.flag")]),
    );

    await rm(join(dir, "status.json"));
    expect(codes(await auditResultDir(dir))).toContain("error RESULT_FILE_MISSING");
  });

  it("rejects a finish.flag that names no final state", async () => {
    await writeFile(join(dir, "finish.flag"), "done\n");
    expect(codes(await auditResultDir(dir))).toEqual(["error FINISH_FLAG_INVALID"]);
  });

  it("warns that the supervisor may be dead when a running run's heartbeat is too old", async () => {
    await rm(join(dir, "finish.flag"));
    await rm(join(dir, "result.md"));
    await writeStatus({ heartbeatAt: "2026-11-29T09:30:00.000Z" });
    const now = new Date("2026-11-29T10:00:00.000Z");
    const stale = await auditResultDir(dir, { now, heartbeatMaxAgeMs: 10 * 60_000 });
    expect(codes(stale)).toEqual(["warning HEARTBEAT_STALE"]);
    expect(stale[0]?.message).toContain("30m");
    expect(stale[0]?.message).toContain("supervisor may be dead");
    expect(await auditResultDir(dir, { now, heartbeatMaxAgeMs: 60 * 60_000 })).toEqual([]);
  });

  it("warns when a failed run gives no reason", async () => {
    await writeStatus({ state: "failed", reason: null });
    await writeFile(join(dir, "finish.flag"), "failed\n");
    expect(codes(await auditResultDir(dir))).toEqual(["warning STATUS_REASON_MISSING"]);
  });

  it("names the line of a bad metrics record and of a step that goes back within an attempt", async () => {
    await appendFile(join(dir, "metrics.jsonl"), 'oops\n{"step":250,"time":"2026-11-28T09:21:00.000Z","reward_mean":0.6,"attempt":1}\n');
    const findings = await auditResultDir(dir);
    expect(findings.map((finding) => [finding.line, finding.code])).toEqual([
      [4, "METRICS_LINE_INVALID"],
      [5, "METRICS_STEP_DECREASED"],
    ]);
  });

  // Resuming from a checkpoint legitimately repeats steps; the attempt number tells them apart.
  it("accepts steps that restart with a new attempt", async () => {
    await appendFile(join(dir, "metrics.jsonl"), '{"step":200,"time":"2026-11-28T09:30:00.000Z","reward_mean":0.6,"attempt":2}\n');
    expect(await auditResultDir(dir)).toEqual([]);
  });

  it("tolerates a torn last metrics line as a warning", async () => {
    await appendFile(join(dir, "metrics.jsonl"), '{"step":400,"ti');
    expect(codes(await auditResultDir(dir))).toEqual(["warning METRICS_LINE_TORN"]);
  });

  it("names the field and line of an invalid status.json", async () => {
    await writeFile(join(dir, "status.json"), '{\n  "state": "succeeded",\n  "attempt": -1,\n  "host": null\n}\n');
    const findings = await auditResultDir(dir);
    expect(findings.filter((finding) => finding.code === "STATUS_INVALID").map((finding) => finding.line)).toContain(3);
  });

  it("never opens a linked file a trainer planted (symlink or hard link) and prints no file's text", async () => {
    const secret = join(dir, "..", "secret.txt");
    await writeFile(secret, '{"step": 1, "canary": "SECRET-CANARY-7f3"}\nroot:x:0:0:SECRET-CANARY-7f3\n');
    await rm(join(dir, "metrics.jsonl"));
    await symlink(secret, join(dir, "metrics.jsonl"));
    await rm(join(dir, "events.jsonl"), { force: true });
    await link(secret, join(dir, "events.jsonl"));
    await writeFile(join(dir, "status.json"), "root:x:0:0:SECRET-CANARY-7f3\n");
    const findings = await auditResultDir(dir);
    const linked = findings.filter((finding) => finding.code === "RESULT_FILE_LINKED");
    expect(linked.map((finding) => finding.file).sort()).toEqual([join(dir, "events.jsonl"), join(dir, "metrics.jsonl")]);
    expect(linked[0]?.severity).toBe("error");
    expect(codes(findings)).toContain("error STATUS_INVALID");
    expect(JSON.stringify(findings)).not.toContain("SECRET-CANARY");
    expect(JSON.stringify(findings)).not.toContain("root:x");
  });
});
