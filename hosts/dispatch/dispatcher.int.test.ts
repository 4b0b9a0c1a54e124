import { mkdir, mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readBlueprintFile } from "../../blueprints/index.ts";
import { fixtureA3rCommand, writeFixtureBlueprint } from "../../test-support/fixture-blueprint.ts";
import { dispatchBlueprints } from "./dispatcher.ts";
import { parseHostsText, type HostConfig } from "../kinds/hosts-config.ts";
import { LocalLauncher } from "../local/local-launcher.ts";

describe("dispatch and wait", () => {
  it("fails a run the host calls unknown yet keeps refusing to launch, instead of waiting forever; the other runs finish", async () => {
    const folder = await mkdtemp(join(tmpdir(), "a3r-dispatch-stuck-"));
    try {
      const workdir = join(folder, "host");
      const config = parseHostsText(`hosts:\n  - { name: here, kind: local, gpus: 0, max_runs: 2, workdir: ${workdir} }\n`, "hosts.yaml")
        .hosts[0] as HostConfig;
      const launcher = new LocalLauncher({ host: "here", workdir, a3r: fixtureA3rCommand });
      const items = await Promise.all(
        ["stuck", "healthy"].map(async (id) => {
          const file = await writeFixtureBlueprint(folder, { id, campaign: "c", steps: 2, stepMs: 50 });
          return { blueprint: await readBlueprintFile(file), file, campaign: "c", resultDir: join(folder, "results", id) };
        }),
      );
      // An unreadable claim dated in the future (a clock that jumped back): never past the
      // grace, so the launcher neither follows it nor takes it over.
      const claim = join(workdir, "c", "stuck", "launch.json");
      await mkdir(join(workdir, "c", "stuck"), { recursive: true });
      await writeFile(claim, "");
      const later = new Date(Date.now() + 3_600_000);
      await utimes(claim, later, later);

      const rows = await dispatchBlueprints({
        items,
        hosts: [{ config, launcher, capacity: { name: "here", gpuIndices: [], maxRuns: 2 } }],
        wait: true,
        intervalMs: 100,
        refusedLaunchLimitMs: 800,
      });
      const byId = Object.fromEntries(rows.map((row) => [row.blueprintId, row]));
      expect(byId.stuck!.state).toBe("launch_failed");
      expect(byId.stuck!.note).toMatch(/here reports no run for stuck but keeps refusing to launch it .*c\/stuck/);
      expect(byId.healthy!.state).toBe("succeeded");
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  }, 60_000);
});
