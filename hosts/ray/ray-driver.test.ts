import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RayDriver } from "./ray-driver.ts";

/**
 * The driver's lifecycle on this side, with stand-in drivers (a shell script as the host's
 * python: it is handed ray_driver.py and ignores it): one that connects and then never
 * answers (a Ray call stuck on a dead cluster), and one that gives up at once. The real
 * driver against a real Ray is in ray-launcher.int.test.ts.
 */
describe("the Ray driver process", () => {
  let folder: string;
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-ray-driver-"));
  });
  afterAll(() => rm(folder, { recursive: true, force: true }));

  const standIn = async (name: string, body: string) => {
    const path = join(folder, name);
    await writeFile(path, `#!/bin/sh\n${body}\n`);
    await chmod(path, 0o755);
    return path;
  };
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  it("stops a driver that answers nothing within the timeout, says which host and head, and starts a new one for the next request", async () => {
    const python = await standIn("stuck", `echo '@@a3r {"id":0,"ok":true,"result":{}}'\necho "stuck in ray.get" >&2\nexec sleep 600`);
    const driver = new RayDriver({ host: "lab", python, address: "127.0.0.9:6379", namespace: "a3r" });
    try {
      const failed = driver.request("states", { names: [] }, 500);
      await waitFor(() => driver.pid !== undefined);
      const first = driver.pid!;
      await expect(failed).rejects.toThrow(/^lab: Ray driver for 127\.0\.0\.9:6379 gave no answer to states within 0\.5 s .*stuck in ray\.get/);
      // The stuck one is killed, so nothing holds the next request behind it.
      await waitFor(() => !alive(first));
      await expect(driver.request("nodes", {}, 500)).rejects.toThrow(/gave no answer to nodes/);
    } finally {
      await driver.close();
    }
  }, 20_000);

  it("fails a request at once with the driver's own reason when it cannot connect", async () => {
    const python = await standIn("refused", `echo "nothing answers at $1 (Connection refused): is the Ray head started there?" >&2\nexit 2`);
    const driver = new RayDriver({ host: "lab", python, address: "127.0.0.9:6379", namespace: "a3r" });
    await expect(driver.request("nodes", {}, 5_000)).rejects.toThrow(/^lab: Ray driver for 127\.0\.0\.9:6379 exited \(code 2\): nothing answers at/);
    expect(driver.pid).toBeUndefined();
  });

  it("ignores lines of its stdout that are not its answers, whole or torn", async () => {
    const python = await standIn(
      "chatty",
      `echo '@@a3r {"id":0,"ok":true,"result":{}}'\nread line\necho '@@a3r {torn'\necho 'ray: a warning'\necho '@@a3r {"id":1,"ok":false,"error":"ValueError: HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 rejected"}'\nread line`,
    );
    const driver = new RayDriver({ host: "lab", python, address: "127.0.0.9:6379", namespace: "a3r" });
    try {
      const failed = driver.request("launch", {}, 5_000);
      await expect(failed).rejects.toThrow(/^lab: Ray at 127\.0\.0\.9:6379: ValueError: /);
      await expect(failed).rejects.not.toThrow(/hf_abcdefghijklmnopqrstuvwxyz0123/);
    } finally {
      await driver.close();
    }
  });
});

async function waitFor(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((resolveWait) => setTimeout(resolveWait, 20));
  }
}
