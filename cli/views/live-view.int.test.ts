import { execFile, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { shellQuote } from "../../core/shell-quote.ts";
import { replayOnScreen } from "../../test-support/terminal-screen.ts";

const run = promisify(execFile);
const repository = fileURLToPath(new URL("../..", import.meta.url));
const program = [process.execPath, "bin/run-ts.js", "test-support/live-view-program.ts"];

// util-linux `script` gives the program a real pseudo-terminal; without it there is no way
// to make stderr a TTY from a test, so that one test is skipped and says why.
const hasScript = spawnSync("script", ["--version"], { encoding: "utf8" }).stdout?.includes("util-linux") === true;
const scriptReason = hasScript ? "" : " (skipped: util-linux `script` is not installed, so no pseudo-terminal can be made)";

describe("live view in a real process", () => {
  it.skipIf(!hasScript)(`redraws its table in place on a real terminal, within its width${scriptReason}`, async () => {
    const command = `stty cols 60 rows 30 && exec ${program.map(shellQuote).join(" ")}`;
    const { stdout } = await run("script", ["-qfec", command, "/dev/null"], { cwd: repository, encoding: "utf8", timeout: 60_000 });
    expect(stdout).toContain("tty=true columns=60");
    // Frames of four lines (header, two runs, summary); the second and third update and the
    // closing note each move up exactly those four rows first.
    expect(stdout.match(/\x1b\[4A\r\x1b\[J/g)).toHaveLength(3);
    expect(stdout.match(/\x1b\[/g)).toHaveLength(6); // nothing else: every sequence is one of those
    const screen = replayOnScreen(stdout, 60);
    expect(screen[0]).toMatch(/^leader: watch \(stage 1\)/);
    expect(screen[1]).toBe("leader: analyze (stage 1)");
    expect(screen.filter((line) => line.startsWith("EXPERIMENT"))).toHaveLength(1);
    expect(screen[3]).toMatch(/^s1-lr-0\.01-seed1\s+gpu-1\s+succeeded\s+20\/20\s+0\.52/);
    expect(screen.at(-1)).toBe("2 experiments: 1 succeeded, 1 running");
    for (const line of screen) expect(Array.from(line).length).toBeLessThanOrEqual(60);
  });

  it("writes plain change lines when stderr is a pipe", async () => {
    const { stderr } = await run(program[0]!, program.slice(1), { cwd: repository, encoding: "utf8", timeout: 60_000 });
    expect(stderr).not.toContain("\x1b[");
    expect(stderr.split("\n")).toEqual([
      "leader: watch (stage 1) tty=false columns=none",
      "  s1-lr-0.01-seed1: running on gpu-1 (GPUs 0) step 3",
      "  s1-lr-0.1-seed1: preparing on gpu-1 (GPUs 0)",
      "  s1-lr-0.1-seed1: running on gpu-1 (GPUs 0) step 4",
      "  s1-lr-0.01-seed1: succeeded on gpu-1 (GPUs 0) step 20 - audit errors: 0",
      "leader: analyze (stage 1)",
      "",
    ]);
  });
});
