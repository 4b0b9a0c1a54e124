import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fixtureA3rCommand } from "../test-support/fixture-blueprint.ts";
import { describeLauncherConformance } from "./launcher-conformance.ts";
import { LocalLauncher } from "./local-launcher.ts";

describeLauncherConformance("local", async () => {
  const workdir = await mkdtemp(join(tmpdir(), "a3r-local-host-"));
  const make = () => new LocalLauncher({ host: "here", workdir, a3r: fixtureA3rCommand });
  return {
    launcher: make(),
    reopen: async () => make(),
    cleanup: () => rm(workdir, { recursive: true, force: true }),
  };
});

describe("local launcher: runs nobody will finish", () => {
  it("reports lost when the run's process group is gone without finish.flag, or was never started", async () => {
    const workdir = await mkdtemp(join(tmpdir(), "a3r-local-lost-"));
    const launcher = new LocalLauncher({ host: "here", workdir, a3r: fixtureA3rCommand });
    try {
      const write = async (id: string, pgid: number | null, launchedAt: string) => {
        await mkdir(join(workdir, "lost", id), { recursive: true });
        await writeFile(join(workdir, "lost", id, "launch.json"), JSON.stringify({ campaign: "lost", blueprintId: id, host: "here", resultDir: join(workdir, "results", id), gpuIndices: [], pgid, launchedAt }));
      };
      const old = new Date(Date.now() - 60_000).toISOString();
      // A process that has exited: its pid names no live group any more.
      const exited = spawnSync("true").pid!;
      await write("died", exited, old);
      await write("never-started", null, old);
      await write("just-started", null, new Date().toISOString());
      const [died, never, young] = await launcher.pollMany(["died", "never-started", "just-started"].map((blueprintId) => ({ campaign: "lost", blueprintId })));
      expect(died!.state).toBe("lost");
      expect(never!.state).toBe("lost");
      expect(young!.state).toBe("launching");
    } finally {
      await rm(workdir, { recursive: true, force: true });
    }
  });
});
