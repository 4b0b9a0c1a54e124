import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { runA3r, type CliResult } from "../test-support/run-cli.ts";

const a3r = (...args: string[]): Promise<CliResult> => runA3r(args);

describe("the a3r command", () => {
  it("prints help and exits 0", async () => {
    const result = await a3r("--help");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Usage: a3r");
    expect(result.stdout).toContain("blueprint");
  });

  it("prints the package version", async () => {
    const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
    const result = await a3r("--version");
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(manifest.version);
  });

  it("exits 2 and names the flag on an unknown option", async () => {
    const result = await a3r("--no-such-flag");
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--no-such-flag");
  });

  it("exits 2 on an unknown command", async () => {
    const result = await a3r("frobnicate");
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("frobnicate");
  });
});
