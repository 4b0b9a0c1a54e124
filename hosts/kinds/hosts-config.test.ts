import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { A3rError } from "../../core/errors.ts";
import { findHost, loadHostsFile, parseHostsText } from "./hosts-config.ts";

function errorOf(action: () => unknown): A3rError {
  try {
    action();
  } catch (error) {
    if (error instanceof A3rError) return error;
    throw error;
  }
  throw new Error("expected an A3rError");
}

describe("parseHostsText", () => {
  it("names the file, line and field of a schema error, and the host it belongs to", () => {
    const text = "hosts:\n  - name: here\n    kind: local\n    workdir: /tmp/a\n  - name: gpu\n    kind: ssh\n    gpus: lots\n    workdir: /data\n";
    const error = errorOf(() => parseHostsText(text, "hosts.yaml"));
    expect(error.code).toBe("CONFIG_INVALID");
    expect(error.where).toBe("hosts.yaml:7");
    expect(error.message).toContain('hosts.1.gpus (host "gpu")');
    expect(error.hint).toMatch(/detect/);
  });

  it("points a missing field at its host entry and an unknown kind at its line", () => {
    expect(errorOf(() => parseHostsText("hosts:\n  - name: a\n    kind: local\n", "h.yaml")).where).toBe("h.yaml:2");
    const kind = errorOf(() => parseHostsText("hosts:\n  - name: a\n    kind: pbs\n    workdir: /x\n", "h.yaml"));
    expect(kind.where).toBe("h.yaml:3");
    expect(kind.hint).toContain("local, ssh, queue, slurm or ray");
  });

  it("reports YAML syntax errors with their line, duplicate names, and a malformed host key", () => {
    const syntax = errorOf(() => parseHostsText("hosts:\n  - name: a\n    kind: local\n   workdir: /tmp\n", "h.yaml"));
    expect(syntax.code).toBe("YAML_INVALID");
    expect(syntax.where).toMatch(/^h\.yaml:\d+$/);
    const twice = errorOf(() => parseHostsText("hosts:\n  - {name: a, kind: local, workdir: /a}\n  - {name: a, kind: local, workdir: /b}\n", "h.yaml"));
    expect(twice.message).toContain("used twice");
    expect(twice.where).toBe("h.yaml:3");
    const key = errorOf(() => parseHostsText("hosts:\n  - name: b\n    kind: ssh\n    workdir: /w\n    host_key: abc\n", "h.yaml"));
    expect(key.where).toBe("h.yaml:5");
    expect(key.hint).toContain("ssh-keygen -l");
  });

  it("accepts the three kinds with their defaults", () => {
    const parsed = parseHostsText(
      "hosts:\n  - {name: a, kind: local, workdir: /a}\n  - {name: b, kind: ssh, workdir: /b, gpus: 2}\n  - {name: c, kind: queue, redis: 'redis://h:6379', gpus: 8}\n",
      "h.yaml",
    );
    expect(parsed.hosts.map((host) => [host.name, host.kind, "gpus" in host ? host.gpus : undefined])).toEqual([
      ["a", "local", "detect"],
      ["b", "ssh", 2],
      ["c", "queue", 8],
    ]);
  });
});

describe("slurm hosts", () => {
  it("names the line of a bad sbatch option, a bad time limit and a login that is no ssh entry", () => {
    const option = errorOf(() =>
      parseHostsText("hosts:\n  - name: hpc\n    kind: slurm\n    workdir: /w\n    sbatch_options: ['--x=1; rm -rf /']\n", "h.yaml"),
    );
    expect(option.where).toBe("h.yaml:5");
    expect(option.message).toContain('hosts.0.sbatch_options.0 (host "hpc")');
    expect(option.hint).toContain("one item");
    const time = errorOf(() => parseHostsText("hosts:\n  - {name: hpc, kind: slurm, workdir: /w, time_limit: soon}\n", "h.yaml"));
    expect(time.message).toMatch(/time_limit.*duration/);
    const login = errorOf(() =>
      parseHostsText("hosts:\n  - {name: here, kind: local, workdir: /a}\n  - name: hpc\n    kind: slurm\n    workdir: /w\n    login: here\n", "h.yaml"),
    );
    expect(login.where).toBe("h.yaml:6");
    expect(login.message).toBe('host "hpc": login "here" is a local host, not an ssh one');
    expect(errorOf(() => parseHostsText("hosts:\n  - {name: hpc, kind: slurm, workdir: /w, login: nowhere}\n", "h.yaml")).message).toContain(
      "not a host of this file",
    );
  });

  it("resolves the login node's ssh entry into the slurm host and places no runs on the login node itself", async () => {
    const folder = await mkdtemp(join(tmpdir(), "a3r-hosts-config-"));
    try {
      await writeFile(
        join(folder, "hosts.yaml"),
        [
          "hosts:",
          "  - {name: hpc-login, kind: ssh, host: login.hpc.example, user: me, workdir: /home/me, gpus: 0}",
          "  - {name: hpc, kind: slurm, login: hpc-login, partition: gpu, account: lab, gpus_per_run: 1, workdir: /scratch/a3r}",
          "  - {name: here-slurm, kind: slurm, workdir: ~/a3r}",
          "",
        ].join("\n"),
      );
      const file = await loadHostsFile(join(folder, "hosts.yaml"), { sshConfigFile: "/nonexistent", home: "/home/me" });
      expect(file.hosts.map((host) => host.name)).toEqual(["hpc", "here-slurm"]);
      expect(findHost(file, "hpc")).toMatchObject({
        kind: "slurm",
        a3r: "a3r",
        gres: "gpu",
        sbatch_options: [],
        login: { host: "login.hpc.example", user: "me", port: 22 },
      });
      const local = findHost(file, "here-slurm");
      expect(local).toMatchObject({ workdir: "/home/me/a3r" });
      expect((local as { a3r: string }).a3r.startsWith(`${process.execPath} `)).toBe(true);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});

describe("loadHostsFile", () => {
  it("resolves ssh aliases through the ssh config the file names, explicit fields winning", async () => {
    const folder = await mkdtemp(join(tmpdir(), "a3r-hosts-config-"));
    try {
      await writeFile(join(folder, "ssh_config"), "Host gpu\n  HostName gpu-box.lab.example\n  Port 2200\n  User ml\n  IdentityFile ~/.ssh/gpu_key\n");
      await writeFile(
        join(folder, "hosts.yaml"),
        "ssh_config: ./ssh_config\nhosts:\n  - {name: gpu, kind: ssh, workdir: ~/a3r, gpus: 1}\n  - {name: other, kind: ssh, host: gpu, user: root, workdir: /w, gpus: 1, a3r: 'node /x/bin/a3r.js'}\n",
      );
      const file = await loadHostsFile(join(folder, "hosts.yaml"), { home: "/home/me" });
      expect(findHost(file, "gpu")).toMatchObject({
        host: "gpu-box.lab.example",
        port: 2200,
        user: "ml",
        identityFiles: ["/home/me/.ssh/gpu_key"],
        a3r: "a3r",
        workdir: "~/a3r",
      });
      expect(findHost(file, "other")).toMatchObject({ host: "gpu-box.lab.example", user: "root", a3r: "node /x/bin/a3r.js" });
      expect(() => findHost(file, "nope")).toThrow(/no host named "nope".*/);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("calls the running a3r on a local host by default, not whatever PATH finds", async () => {
    const folder = await mkdtemp(join(tmpdir(), "a3r-hosts-config-"));
    try {
      await writeFile(join(folder, "hosts.yaml"), "hosts:\n  - {name: here, kind: local, workdir: /tmp/a3r-here, gpus: 0}\n");
      const file = await loadHostsFile(join(folder, "hosts.yaml"), { sshConfigFile: "/nonexistent" });
      const a3r = (findHost(file, "here") as { a3r: string }).a3r;
      expect(a3r.startsWith(`${process.execPath} `)).toBe(true);
      expect(existsSync(a3r.slice(process.execPath.length + 1))).toBe(true);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("says FILE_NOT_FOUND with a hint for a missing file", async () => {
    await expect(loadHostsFile("/nonexistent/hosts.yaml")).rejects.toMatchObject({ code: "FILE_NOT_FOUND", where: "/nonexistent/hosts.yaml" });
  });
});

describe("examples/hosts", () => {
  it("every example hosts file is valid", async () => {
    const folder = new URL("../../examples/hosts/", import.meta.url).pathname;
    for (const name of ["hosts.yaml", "local-only.yaml"]) {
      const file = await loadHostsFile(join(folder, name), { sshConfigFile: "/nonexistent" });
      expect(file.hosts.length).toBeGreaterThan(0);
    }
  });
});
