import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditCampaign, createCampaign, readEvents, readLedger, summarizeLedger } from "../../campaign/index.ts";
import { parseHostsText } from "../../hosts/kinds/hosts-config.ts";
import { SshConnection } from "../../hosts/ssh/ssh-connection.ts";
import { SshLauncher } from "../../hosts/ssh/ssh-launcher.ts";
import type { DispatchHost, HostConfig } from "../../hosts/index.ts";
import { fixtureA3rCommand } from "../../test-support/fixture-blueprint.ts";
import { fixtureTopicText } from "../../test-support/fixture-topic.ts";
import { startSshServer, type SshServerHandle } from "../../test-support/sshd-server.ts";
import { HeuristicPlanner } from "../planners/heuristic/heuristic-planner.ts";
import { runLeader } from "./leader-graph.ts";
import { importRunLedgers } from "../record/run-ledgers.ts";

/**
 * A campaign whose runs go to an ssh host (a real sshd on this machine; the host's a3r is
 * the fixture worker). A worker there cannot reach the campaign's ledger: each launch
 * must carry the run's share of the LLM budget, and what the worker booked in its own
 * ledger must reach the campaign's, once, so the budget and the report count it.
 */
describe("a campaign on an ssh host", () => {
  let sshd: SshServerHandle;
  let folder: string;

  beforeAll(async () => {
    sshd = await startSshServer();
    folder = await mkdtemp(join(tmpdir(), "a3r-remote-campaign-"));
  });
  afterAll(async () => {
    await sshd?.stop();
    await rm(folder, { recursive: true, force: true });
  });

  it("gives each remote run its share of the LLM budget and books the runs' own costs in the campaign's ledger once", async () => {
    const runsDir = join(folder, "runs");
    const workdir = join(folder, "box");
    const topic = fixtureTopicText({ stages: 1 }).replace(
      "budgets: { stages: 1, experiments: 10 }",
      "budgets: { stages: 1, experiments: 10, llm_tokens: 100000, llm_usd: 4 }",
    );
    const { paths } = await createCampaign(runsDir, "remote", topic);
    const config = parseHostsText(`hosts:\n  - { name: box, kind: ssh, host: 127.0.0.1, gpus: 0, max_runs: 2, workdir: ${workdir} }\n`, "hosts.yaml")
      .hosts[0] as HostConfig;
    const connection = new SshConnection({
      name: "box",
      host: "127.0.0.1",
      port: sshd.port,
      username: sshd.user,
      identityFiles: [sshd.userKeyFile],
      hostKey: sshd.hostKeyFingerprint,
      keepaliveIntervalMs: 1000,
    });
    const hosts: DispatchHost[] = [
      {
        config,
        launcher: new SshLauncher({ host: "box", workdir, a3r: fixtureA3rCommand, connection }),
        capacity: { name: "box", gpuIndices: [], maxRuns: 2 },
      },
    ];
    try {
      const options = { runsDir, campaignId: "remote", planner: new HeuristicPlanner(), hosts, intervalMs: 300 };
      const { state } = await runLeader(options);
      expect(state.stop?.reason).toBe("budget");
      const ids = state.history.flatMap((record) => record.outcomes.map((outcome) => outcome.blueprintId));
      expect(ids).toEqual(["s1-baseline-seed1", "s1-lr-0.01-seed1"]);

      // Nothing was spent before the stage: each of its 2 runs may spend half of each budget.
      for (const id of ids) {
        const launched = (await readEvents(join(paths.result(id), "events.jsonl"))).events.find((event) => event.kind === "run.launched");
        expect(launched?.llmLimits, id).toEqual({ tokens: 50_000, usd: 2 });
      }
      const entries = (await readLedger(paths.ledger)).entries;
      expect(
        entries
          .filter((entry) => entry.kind === "llm")
          .map((entry) => entry.importedFrom)
          .sort(),
      ).toEqual(["s1-baseline-seed1#1", "s1-lr-0.01-seed1#1"]);
      expect(summarizeLedger(entries).llm.byRole.diagnose.calls).toBe(2);
      expect((await readEvents(paths.events)).events.filter((event) => event.kind === "stage.run_ledgers_imported")).toHaveLength(1);
      expect(await readFile(join(paths.root, "report.md"), "utf8")).toMatch(/diagnose/);

      // The import run again (an analysis re-run after a crash) and a resume book nothing twice.
      expect(await importRunLedgers(paths, ids)).toEqual(ids);
      await runLeader(options);
      expect((await readLedger(paths.ledger)).entries).toHaveLength(entries.length);
      expect((await auditCampaign(paths.root)).filter((finding) => finding.severity === "error")).toEqual([]);
    } finally {
      await connection.close();
    }
  }, 120_000);
});
