import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditResultDir, readEvents } from "../campaign/index.ts";
import { checkoutA3rCommand, fixtureA3rCommand, writeFixtureBlueprint } from "../test-support/fixture-blueprint.ts";
import { startRedisServer, type RedisServerHandle } from "../test-support/redis-server.ts";
import { startSshServer, type SshServerHandle } from "../test-support/sshd-server.ts";
import { slowTests, slowTierNote } from "../test-support/slow-tests.ts";
import { WorkerDaemon } from "../hosts/queue/worker-daemon.ts";
import { runA3r, type CliResult } from "../test-support/run-cli.ts";

let sshd: SshServerHandle;
let redis: RedisServerHandle;
let daemon: WorkerDaemon;
let folder: string;
let hostsFile: string;

const a3r = (...args: string[]): Promise<CliResult> => runA3r(args, { timeoutMs: 90_000, env: { A3R_LOG_LEVEL: "error" } });

beforeAll(async () => {
  [sshd, redis] = await Promise.all([startSshServer(), startRedisServer()]);
  folder = await mkdtemp(join(tmpdir(), "a3r-hosts-cli-"));
  daemon = await WorkerDaemon.start({
    redisUrl: redis.url,
    queue: "cli",
    gpus: 1,
    workdir: join(folder, "node"),
    a3r: fixtureA3rCommand,
    reportIntervalMs: 150,
  });
  hostsFile = join(folder, "hosts.yaml");
  await writeFile(
    hostsFile,
    `ssh_config: ./ssh_config
hosts:
  - name: here
    kind: local
    gpus: 1
    workdir: ${join(folder, "here")}
    a3r: "${fixtureA3rCommand}"
  - name: box
    kind: ssh
    host: testbox
    identity_file: ${sshd.userKeyFile}
    host_key: "${sshd.hostKeyFingerprint}"
    gpus: 1
    workdir: ${join(folder, "box")}
    a3r: "${fixtureA3rCommand}"
  - name: cluster
    kind: queue
    redis: ${redis.url}
    queue: cli
    gpus: 1
`,
  );
  // The ssh host is reached through an alias, resolved the way OpenSSH would.
  await writeFile(
    join(folder, "ssh_config"),
    `Host testbox\n  HostName 127.0.0.1\n  Port ${sshd.port}\n  User ${sshd.user}\n\nHost *\n  User nobody\n  Port 2\n`,
  );
});

afterAll(async () => {
  await daemon?.stop();
  await Promise.all([sshd?.stop(), redis?.stop()]);
  await rm(folder, { recursive: true, force: true });
});

describe("a3r dispatch, runs and hosts check", () => {
  it("dispatches to local, ssh and queue hosts, one run per GPU slot, and brings back audited results", async () => {
    const files = [];
    for (let index = 0; index < 4; index += 1)
      files.push(await writeFixtureBlueprint(folder, { id: `cli-${index}`, campaign: "cli-test", gpus: 1, steps: 3, stepMs: 100 }));
    const runsDir = join(folder, "runs");
    const result = await a3r("dispatch", ...files, "--hosts", hostsFile, "--runs-dir", runsDir, "--wait", "--interval", "300ms", "--json");
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const rows = JSON.parse(result.stdout) as Array<{ blueprintId: string; host: string; state: string; auditErrors: number; gpuIndices: number[] }>;
    expect(rows.map((row) => row.state)).toEqual(["succeeded", "succeeded", "succeeded", "succeeded"]);
    expect(new Set(rows.map((row) => row.host))).toEqual(new Set(["here", "box", "cluster"]));
    for (const row of rows) {
      const dir = join(runsDir, "cli-test", "results", row.blueprintId);
      expect((await auditResultDir(dir)).filter((finding) => finding.severity === "error")).toEqual([]);
      expect(row.auditErrors).toBe(0);
    }
    const events = await readEvents(join(runsDir, "cli-test", "events.jsonl"));
    expect(events.events.filter((event) => event.kind === "run.dispatched")).toHaveLength(4);

    // Dispatching the same blueprints again launches nothing.
    const again = await a3r("dispatch", ...files, "--hosts", hostsFile, "--runs-dir", runsDir, "--json");
    expect(again.code).toBe(0);
    expect((JSON.parse(again.stdout) as Array<{ note: string }>).every((row) => row.note !== "launched")).toBe(true);
    const eventsAfter = await readEvents(join(runsDir, "cli-test", "events.jsonl"));
    expect(eventsAfter.events.filter((event) => event.kind === "run.dispatched")).toHaveLength(4);

    const listed = await a3r("runs", "--hosts", hostsFile, "--json");
    expect(listed.code).toBe(0);
    const found = JSON.parse(listed.stdout) as Array<{ ref: { blueprintId: string }; host: string; state: string }>;
    expect(found.map((entry) => entry.ref.blueprintId).sort()).toEqual(["cli-0", "cli-1", "cli-2", "cli-3"]);
    const table = await a3r("runs", "--hosts", hostsFile);
    expect(table.stdout).toMatch(/HOST\s+CAMPAIGN\s+BLUEPRINT\s+STATE/);
  });

  // Slow tier: in npm test, the case above runs `a3r dispatch --wait`, and cli/research-command's
  // "runs a topic to its report, ..." launches the real `a3r worker run` of this checkout on
  // a local host and audits what it brings back.
  it.skipIf(!slowTests)(`runs a blueprint end to end with the real worker (a3r worker run of this checkout)${slowTierNote}`, async () => {
    const realHosts = join(folder, "real-hosts.yaml");
    await writeFile(
      realHosts,
      `hosts:\n  - name: here\n    kind: local\n    gpus: 0\n    workdir: ${join(folder, "real")}\n    a3r: "${checkoutA3rCommand}"\n`,
    );
    const trainerDir = fileURLToPath(new URL("../worker/__fixtures__/", import.meta.url)).replace(/\/$/, "");
    const blueprint = join(folder, "real-worker.md");
    const text = (await readFile(await writeFixtureBlueprint(folder, { id: "real-worker", campaign: "real" }), "utf8"))
      .replace("`/tmp/a3r-fixture/code`", `\`${trainerDir}\``)
      .replace("`/usr/bin/python3`", `\`${process.execPath}\``)
      .replace("echo fixture", "node trainer.mjs --steps 3 --step-ms 50")
      .replace("fixture: {", "first_signal_timeout: 20s\nworker: { poll_interval: 100ms, heartbeat_interval: 500ms, grace_period: 300ms }\nfixture: {");
    await writeFile(blueprint, text);
    const runsDir = join(folder, "real-runs");
    const result = await a3r("dispatch", blueprint, "--hosts", realHosts, "--runs-dir", runsDir, "--wait", "--interval", "300ms");
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/real-worker: succeeded on here/);
    const dir = join(runsDir, "real", "results", "real-worker");
    expect((await readFile(join(dir, "finish.flag"), "utf8")).trim()).toBe("succeeded");
    expect((await auditResultDir(dir)).filter((finding) => finding.severity === "error")).toEqual([]);
  });

  it("checks every host: reachable, host key, a3r, GPUs, disk; a wrong host key is refused with its fingerprint", async () => {
    const good = await a3r("hosts", "check", "--hosts", hostsFile, "--json");
    expect(good.code, good.stdout + good.stderr).toBe(0);
    const checks = JSON.parse(good.stdout) as Array<{ name: string; ok: boolean; hostKey: string; a3r: string; freeDisk: string; gpus: string }>;
    expect(checks.map((check) => [check.name, check.ok])).toEqual([
      ["here", true],
      ["box", true],
      ["cluster", true],
    ]);
    expect(checks[1]!.hostKey).toBe(`ok ${sshd.hostKeyFingerprint}`);
    expect(checks[0]!.a3r).toMatch(/^yes/);
    expect(checks[0]!.freeDisk).toMatch(/iB$/);

    const badHosts = join(folder, "bad-key.yaml");
    await writeFile(
      badHosts,
      `hosts:\n  - name: box\n    kind: ssh\n    host: 127.0.0.1\n    port: ${sshd.port}\n    user: ${sshd.user}\n    identity_file: ${sshd.userKeyFile}\n    host_key: "SHA256:${"B".repeat(43)}"\n    gpus: 0\n    workdir: /tmp\n`,
    );
    const refused = await a3r("hosts", "check", "--hosts", badHosts);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain(`REFUSED ${sshd.hostKeyFingerprint}`);
    expect(refused.stdout).toContain("HOST_KEY_MISMATCH");
  });

  it("reports bad input clearly and fast: hosts.yaml errors with line numbers, unreachable port", async () => {
    const invalid = join(folder, "invalid.yaml");
    await writeFile(
      invalid,
      `hosts:\n  - name: here\n    kind: local\n    workdir: /tmp/x\n  - name: gpu\n    kind: ssh\n    gpus: many\n    workdir: /data\n`,
    );
    const schema = await a3r("hosts", "check", "--hosts", invalid);
    expect(schema.code).toBe(1);
    expect(schema.stderr).toContain(`${invalid}:7`);
    expect(schema.stderr).toMatch(/gpus/);
    expect(schema.stderr).not.toMatch(/at .*\.ts:\d+/); // one clear line, no stack

    const broken = join(folder, "broken.yaml");
    await writeFile(broken, `hosts:\n  - name: here\n    kind: local\n   workdir: /tmp\n`);
    const yamlError = await a3r("hosts", "check", "--hosts", broken);
    expect(yamlError.code).toBe(1);
    expect(yamlError.stderr).toMatch(new RegExp(`YAML_INVALID.*${broken}:\\d`));

    const missing = await a3r("hosts", "check", "--hosts", join(folder, "nope.yaml"));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("FILE_NOT_FOUND");

    const closed = join(folder, "closed.yaml");
    await writeFile(
      closed,
      `hosts:\n  - name: dead\n    kind: ssh\n    host: 127.0.0.1\n    port: 1\n    identity_file: ${sshd.userKeyFile}\n    gpus: 0\n    workdir: /tmp\n`,
    );
    const started = Date.now();
    const unreachable = await a3r("hosts", "check", "--hosts", closed);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stdout).toContain("HOST_UNREACHABLE");
    expect(Date.now() - started).toBeLessThan(20_000);

    const blueprint = await writeFixtureBlueprint(folder, { id: "nowhere", campaign: "cli-test" });
    const noHost = await a3r("dispatch", blueprint, "--hosts", closed, "--runs-dir", join(folder, "runs-none"));
    expect(noHost.code).toBe(1);
    expect(noHost.stderr).toContain("no host of");
  });
});
