import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Finding } from "./finding.ts";
import { runA3r, type CliResult } from "../test-support/run-cli.ts";

const fixtures = new URL("./__fixtures__/", import.meta.url).pathname;
const consistent = join(fixtures, "result-dirs", "consistent");
const inconsistent = join(fixtures, "result-dirs", "inconsistent");
const explained = join(fixtures, "campaigns", "explained");
const unaccounted = join(fixtures, "campaigns", "unaccounted");
const blueprint = join(explained, "stages", "1", "blueprints", "s1-lr-3e-6.md");

const a3r = (...args: string[]): Promise<CliResult> => runA3r(args);

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "a3r-audit-cli-"));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe("a3r audit", () => {
  it("exits 0 on a consistent result directory, a clean campaign and a valid blueprint together", async () => {
    const result = await a3r("audit", consistent, explained, blueprint);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("0 errors, 0 warnings");
    expect(result.stdout).toContain(`result-dir ${consistent}`);
    expect(result.stdout).toContain(`campaign ${explained}`);
    expect(result.stdout).toContain(`blueprint ${blueprint}`);
  });

  it("exits 1 and prints file:line: severity code message with a hint for an inconsistent result directory", async () => {
    const result = await a3r("audit", inconsistent);
    expect(result.code).toBe(1);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(
      new RegExp(`^${join(inconsistent, "finish.flag")}:1: error FINISH_FLAG_MISMATCH finish.flag says succeeded but status.json says running`),
    );
    expect(lines[1]).toMatch(/^ {2}hint: \S/);
    expect(lines.at(-1)).toBe(`1 error, 0 warnings in result-dir ${inconsistent}`);
  });

  it("exits 1 for a campaign with an unaccounted blueprint, and --json gives findings and summary", async () => {
    const result = await a3r("audit", "--json", unaccounted);
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout) as { findings: Finding[]; summary: { errors: number; warnings: number; paths: { path: string; kind: string }[] } };
    expect(report.summary).toEqual({ errors: 1, warnings: 0, paths: [{ path: unaccounted, kind: "campaign" }] });
    expect(report.findings).toEqual([
      expect.objectContaining({
        severity: "error",
        code: "BLUEPRINT_UNACCOUNTED",
        line: 1,
        file: join(unaccounted, "stages", "1", "blueprints", "s1-lr-1e-5.md"),
      }),
    ]);
    expect(report.findings[0]?.hint).toContain("blueprint.skipped");
  });

  it("prints warnings but exits 0 when a live run's heartbeat is older than --heartbeat-max-age", async () => {
    const dir = join(scratch, "live");
    await cp(consistent, dir, { recursive: true });
    await rm(join(dir, "finish.flag"));
    await rm(join(dir, "result.md"));
    const heartbeatAt = new Date(Date.now() - 5 * 60_000).toISOString();
    await writeFile(
      join(dir, "status.json"),
      JSON.stringify({
        state: "running",
        attempt: 1,
        host: "gpu-01",
        pid: 4242,
        pgid: 4242,
        startedAt: heartbeatAt,
        heartbeatAt,
        step: 10,
        lastMetrics: null,
        reason: null,
      }),
    );
    const fresh = await a3r("audit", dir);
    expect(fresh.code).toBe(0);
    expect(fresh.stdout).toContain("0 errors, 0 warnings");
    const stale = await a3r("audit", dir, "--heartbeat-max-age", "2m", "--json");
    expect(stale.code).toBe(0);
    const report = JSON.parse(stale.stdout) as { findings: Finding[]; summary: { errors: number; warnings: number } };
    expect(report.summary).toMatchObject({ errors: 0, warnings: 1 });
    expect(report.findings[0]?.code).toBe("HEARTBEAT_STALE");
  });

  it("passes --check-paths on to the blueprint audit", async () => {
    expect((await a3r("audit", blueprint)).code).toBe(0);
    const checked = await a3r("audit", blueprint, "--check-paths");
    expect(checked.code).toBe(1);
    expect(checked.stdout).toContain("PATH_NOT_FOUND");
  });

  it("fails with a clear one-line error naming a missing path", async () => {
    const missing = join(scratch, "no-such-dir");
    const result = await a3r("audit", consistent, missing);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(`error [FILE_NOT_FOUND] ${missing}`);
    expect(result.stderr).toContain("hint:");
    expect(result.stderr).not.toContain("    at ");
  });

  it("fails naming a path that is neither a blueprint, a result directory nor a campaign", async () => {
    const empty = join(scratch, "empty");
    await cp(join(fixtures, "campaigns", "explained", "stages", "1"), join(empty, "not-a-campaign"), { recursive: true });
    const result = await a3r("audit", join(empty, "not-a-campaign"));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`error [PATH_KIND_UNKNOWN] ${join(empty, "not-a-campaign")}`);
    const text = join(scratch, "notes.txt");
    await writeFile(text, "hello");
    expect((await a3r("audit", text)).stderr).toContain("PATH_KIND_UNKNOWN");
  });

  it("exits 2 on a bad --heartbeat-max-age and when no path is given", async () => {
    const bad = await a3r("audit", consistent, "--heartbeat-max-age", "soon");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--heartbeat-max-age");
    expect((await a3r("audit")).code).toBe(2);
  });
});
