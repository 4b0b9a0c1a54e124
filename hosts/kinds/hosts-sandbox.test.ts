import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { A3rError } from "../../core/errors.ts";
import { findHost, loadHostsFile, parseHostsText } from "./hosts-config.ts";

/** hosts.yaml `sandbox: bwrap | none` on any kind, and how it reaches the host's workers. */
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "a3r-hosts-sandbox-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("hosts.yaml sandbox", () => {
  it("any kind may say it; the worker gets it as A3R_SANDBOX before the host's a3r command", async () => {
    const file = join(dir, "hosts.yaml");
    await writeFile(
      file,
      [
        "hosts:",
        "  - { name: here, kind: local, workdir: /tmp/a, a3r: 'node /opt/a3r/bin/a3r.js', sandbox: none }",
        "  - { name: box, kind: ssh, host: 127.0.0.1, user: me, agent: true, workdir: /data, sandbox: bwrap }",
        "  - { name: plain, kind: local, workdir: /tmp/b, a3r: 'node /opt/a3r/bin/a3r.js' }",
      ].join("\n"),
    );
    const hosts = await loadHostsFile(file, { sshConfigFile: join(dir, "none"), home: dir });
    const here = findHost(hosts, "here") as { a3r: string; sandbox?: string };
    expect(here).toMatchObject({ sandbox: "none", a3r: "env A3R_SANDBOX=none node /opt/a3r/bin/a3r.js" });
    expect((findHost(hosts, "box") as { a3r: string }).a3r).toMatch(/^env A3R_SANDBOX=bwrap /);
    expect((findHost(hosts, "plain") as { a3r: string }).a3r).toBe("node /opt/a3r/bin/a3r.js");
    // As every launcher runs it: `exec <a3r> worker run ...` in a shell (the slurm script's exec too).
    const shown = spawnSync("sh", ["-c", `exec ${here.a3r.replace("node /opt/a3r/bin/a3r.js", "sh -c 'echo $A3R_SANDBOX'")}`], { encoding: "utf8" });
    expect(shown.stdout.trim()).toBe("none");
  });

  it("anything else is refused with the field and host named", () => {
    let error: unknown;
    try {
      parseHostsText("hosts:\n  - name: here\n    kind: local\n    workdir: /tmp/a\n    sandbox: docker\n", "hosts.yaml");
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(A3rError);
    expect((error as A3rError).message).toContain('hosts.0.sandbox (host "here")');
    expect((error as A3rError).where).toBe("hosts.yaml:5");
  });
});
