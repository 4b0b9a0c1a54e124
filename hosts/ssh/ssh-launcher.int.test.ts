import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditResultDir, readEvents } from "../../campaign/index.ts";
import { isA3rError } from "../../core/errors.ts";
import { fixtureA3rCommand, writeFixtureBlueprint } from "../../test-support/fixture-blueprint.ts";
import { startSshServer, type SshServerHandle } from "../../test-support/sshd-server.ts";
import { describeLauncherConformance, waitForProgress } from "../../test-support/launcher-conformance.ts";
import { SshConnection, type SshConnectionOptions } from "./ssh-connection.ts";
import { SshLauncher } from "./ssh-launcher.ts";

// One real sshd (own host key, user key, free port) serves every test in this file.
let sshd: SshServerHandle;
let workdir: string;

const connectionOptions = (overrides: Partial<SshConnectionOptions> = {}): SshConnectionOptions => ({
  name: "box",
  host: "127.0.0.1",
  port: sshd.port,
  username: sshd.user,
  identityFiles: [sshd.userKeyFile],
  hostKey: sshd.hostKeyFingerprint,
  keepaliveIntervalMs: 1000,
  reconnectForMs: 20_000,
  backoffInitialMs: 100,
  ...overrides,
});

const makeLauncher = (overrides: Partial<SshConnectionOptions> = {}) =>
  new SshLauncher({ host: "box", workdir, a3r: fixtureA3rCommand, connection: new SshConnection(connectionOptions(overrides)) });

beforeAll(async () => {
  sshd = await startSshServer();
  workdir = await mkdtemp(join(tmpdir(), "a3r-ssh-host-"));
});

afterAll(async () => {
  await sshd?.stop();
  await rm(workdir, { recursive: true, force: true });
});

describeLauncherConformance("ssh", async () => ({
  launcher: makeLauncher(),
  reopen: async () => makeLauncher(),
  cleanup: async () => undefined,
}));

describe("ssh launcher against a real sshd", () => {
  it("keeps the run going when the connection drops mid-run; polling resumes and results arrive", async () => {
    const folder = await mkdtemp(join(tmpdir(), "a3r-ssh-drop-"));
    const launcher = makeLauncher();
    try {
      const blueprintFile = await writeFixtureBlueprint(folder, { id: "survives-drop", campaign: "drops", steps: 20, stepMs: 150 });
      const { ref, started } = await launcher.launch({
        campaign: "drops",
        blueprintId: "survives-drop",
        blueprintFile,
        gpuIndices: [0],
        resultDir: join(folder, "unused"),
      });
      expect(started).toBe(true);
      const before = await waitForProgress(launcher, ref, (progress) => (progress.step ?? 0) >= 3);
      expect(launcher.connection.connects).toBe(1);

      // Kill the server side of the session: the client sees the connection drop.
      expect(await sshd.dropConnections()).toBeGreaterThan(0);
      const after = await waitForProgress(launcher, ref, (progress) => (progress.step ?? 0) > (before.step ?? 0));
      expect(after.state).toBe("running");
      expect(launcher.connection.connects).toBeGreaterThanOrEqual(2);

      const finished = await waitForProgress(launcher, ref, (progress) => progress.finished);
      expect(finished.state).toBe("succeeded");
      expect(finished.gpuIndices).toEqual([0]);
      const destination = join(folder, "results", "survives-drop");
      const fetched = await launcher.fetch(ref, destination);
      expect(fetched.complete).toBe(true);
      expect((await auditResultDir(destination)).filter((finding) => finding.severity === "error")).toEqual([]);
      const events = await readEvents(join(destination, "events.jsonl"));
      const launches = events.events.filter((event) => event.kind === "run.launched");
      expect(launches).toHaveLength(1);
      expect(launches[0]?.gpus).toBe("0");
    } finally {
      await launcher.close();
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("reports a claimed run as launching within the grace; past it, a claim whose worker never started is launched again", async () => {
    const launcher = makeLauncher();
    const folder = await mkdtemp(join(tmpdir(), "a3r-ssh-claims-"));
    try {
      const fresh = join(workdir, "claims", "fresh");
      const stale = join(workdir, "claims", "stale");
      const half = join(workdir, "claims", "half");
      for (const dir of [fresh, stale, half]) await mkdir(join(dir, ".launched"), { recursive: true });
      const past = new Date(Date.now() - 120_000);
      await utimes(join(stale, ".launched"), past, past);
      // A worker recorded its group, then the launch was cut off before launch.json.
      await writeFile(join(half, "pgid"), "999999\n");
      await utimes(join(half, ".launched"), past, past);
      const [young, old, started] = await launcher.pollMany(["fresh", "stale", "half"].map((blueprintId) => ({ campaign: "claims", blueprintId })));
      expect(young!.state).toBe("launching");
      expect(old!.state).toBe("unknown");
      expect(started!.state).toBe("lost");
      expect(started!.reason).toMatch(/started a worker but never recorded it/);
      expect(
        (await launcher.launch({ campaign: "claims", blueprintId: "fresh", blueprintFile: "/nonexistent", gpuIndices: [], resultDir: "/unused" })).started,
      ).toBe(false);
      expect(
        (await launcher.launch({ campaign: "claims", blueprintId: "half", blueprintFile: "/nonexistent", gpuIndices: [], resultDir: "/unused" })).started,
      ).toBe(false);
      const blueprintFile = await writeFixtureBlueprint(folder, { id: "stale", campaign: "claims", steps: 2, stepMs: 50 });
      const relaunch = await launcher.launch({ campaign: "claims", blueprintId: "stale", blueprintFile, gpuIndices: [], resultDir: join(folder, "unused") });
      expect(relaunch.started).toBe(true);
      const finished = await waitForProgress(launcher, relaunch.ref, (progress) => progress.finished);
      expect(finished.state).toBe("succeeded");
      expect((await readdir(stale)).some((name) => name.startsWith(".launched.never-started-"))).toBe(true);
    } finally {
      await launcher.close();
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("revives a run whose worker group died without finish.flag, only when asked to, and never a finished one", async () => {
    const launcher = makeLauncher();
    const folder = await mkdtemp(join(tmpdir(), "a3r-ssh-revive-"));
    try {
      const blueprintFile = await writeFixtureBlueprint(folder, { id: "orphan", campaign: "revive", steps: 20, stepMs: 100 });
      const request = { campaign: "revive", blueprintId: "orphan", blueprintFile, gpuIndices: [], resultDir: join(folder, "unused") };
      const first = await launcher.launch(request);
      expect(first.started).toBe(true);
      await waitForProgress(launcher, first.ref, (progress) => (progress.step ?? 0) >= 1);
      // The worker dies with nobody to record it (sshd runs on this machine, so its group is ours to kill).
      process.kill(-first.pgid!, "SIGKILL");
      expect((await waitForProgress(launcher, first.ref, (progress) => progress.state === "lost")).finished).toBe(false);
      expect((await launcher.launch(request)).started).toBe(false);
      const revived = await launcher.launch({ ...request, revive: true });
      expect(revived.started).toBe(true);
      expect(revived.pgid).not.toBe(first.pgid);
      const done = await waitForProgress(launcher, revived.ref, (progress) => progress.finished || progress.state === "lost").catch((error: Error) => error);
      if (!("state" in done) || done.state !== "succeeded") {
        const log = await readFile(join(workdir, "revive", "orphan", "worker.log"), "utf8").catch(() => "(no worker.log)");
        throw new Error(`the revived run did not succeed: ${JSON.stringify(done)}\n${log}`);
      }
      expect((await readdir(join(workdir, "revive", "orphan"))).some((name) => name.startsWith("launch.worker-gone-"))).toBe(true);
      expect((await launcher.launch({ ...request, revive: true })).started).toBe(false);
    } finally {
      await launcher.close();
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("takes over an abandoned claim once when several launchers race, and is not blocked by the lock of a takeover that was killed", async () => {
    const launchers = Array.from({ length: 4 }, () => makeLauncher());
    const folder = await mkdtemp(join(tmpdir(), "a3r-ssh-takeover-"));
    try {
      const past = new Date(Date.now() - 120_000);
      for (const id of ["raced", "killed-holder"]) {
        await mkdir(join(workdir, "takeover", id, ".launched"), { recursive: true });
        await utimes(join(workdir, "takeover", id, ".launched"), past, past);
      }
      const request = async (id: string) => ({
        campaign: "takeover",
        blueprintId: id,
        blueprintFile: await writeFixtureBlueprint(folder, { id, campaign: "takeover", steps: 1, stepMs: 10 }),
        gpuIndices: [],
        resultDir: join(folder, "unused"),
      });
      // The moment the lock closes is too short to hit from outside: this checks exactly-once under concurrency.
      const raced = await Promise.all(launchers.map(async (launcher) => launcher.launch(await request("raced"))));
      expect(raced.filter((outcome) => outcome.started)).toHaveLength(1);
      // A launcher killed while it held the takeover lock: the lock goes with it.
      const holder = spawn("flock", ["-o", join(workdir, "takeover", "killed-holder", ".takeover.lock"), "sleep", "60"], { stdio: "ignore" });
      await new Promise((resolve) => setTimeout(resolve, 300));
      holder.kill("SIGKILL");
      await new Promise((resolve) => holder.once("exit", resolve));
      expect((await launchers[0]!.launch(await request("killed-holder"))).started).toBe(true);
      for (const id of ["raced", "killed-holder"])
        await waitForProgress(launchers[0]!, { campaign: "takeover", blueprintId: id }, (progress) => progress.finished);
    } finally {
      await Promise.all(launchers.map((launcher) => launcher.close()));
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("never opens more than 8 channels on one connection, queueing the rest", async () => {
    const connection = new SshConnection(connectionOptions());
    try {
      const results = await Promise.all(Array.from({ length: 24 }, (_, index) => connection.exec(`sleep 0.2; echo ${index}`, { idempotent: true })));
      expect(results.map((result) => result.stdout.trim())).toEqual(Array.from({ length: 24 }, (_, index) => String(index)));
      expect(connection.peakChannels).toBe(8);
      expect(connection.connects).toBe(1);
    } finally {
      await connection.close();
    }
  });

  it("refuses a wrong host key and shows the fingerprint it was offered", async () => {
    const wrong = "SHA256:" + "A".repeat(43);
    const connection = new SshConnection(connectionOptions({ hostKey: wrong }));
    const error = await connection.connect().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isA3rError(error, "HOST_KEY_MISMATCH")).toBe(true);
    expect((error as Error).message).toContain(sshd.hostKeyFingerprint);
    expect((error as Error).message).toContain(wrong);
    await connection.close();
  });

  it("refuses an unpinned host key, naming the fingerprint to pin", async () => {
    const connection = new SshConnection(connectionOptions({ hostKey: undefined }));
    const error = await connection.connect().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isA3rError(error, "HOST_KEY_UNKNOWN")).toBe(true);
    expect((error as { hint?: string }).hint).toContain(sshd.hostKeyFingerprint);
    await connection.close();
  });

  it("fails fast and clearly on an unreachable port, an unknown address and a bad key file", async () => {
    const started = Date.now();
    const unreachable = new SshConnection(connectionOptions({ port: 1, reconnectForMs: 500 }));
    const refused = await unreachable.connect().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isA3rError(refused, "HOST_UNREACHABLE")).toBe(true);
    expect(Date.now() - started).toBeLessThan(5000);

    const nowhere = new SshConnection(connectionOptions({ host: "a3r-no-such-host.invalid" }));
    const unknown = await nowhere.connect().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isA3rError(unknown, "HOST_UNKNOWN")).toBe(true);
    expect((unknown as Error).message).toContain("a3r-no-such-host.invalid");

    const folder = await mkdtemp(join(tmpdir(), "a3r-badkey-"));
    const badKey = join(folder, "id_bad");
    await writeFile(badKey, "this is not a key\n");
    const bad = new SshConnection(connectionOptions({ identityFiles: [badKey] }));
    const keyError = await bad.connect().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isA3rError(keyError, "SSH_KEY_INVALID")).toBe(true);
    expect((keyError as { where?: string }).where).toBe(badKey);
    await rm(folder, { recursive: true, force: true });
  });
});
