import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadHostsFile, parseHostsText } from "../index.ts";
import { describeNodes } from "./ray-kind.ts";

describe("kind: ray in hosts.yaml", () => {
  let folder: string;
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-ray-kind-"));
  });
  afterAll(() => rm(folder, { recursive: true, force: true }));

  it("loads an entry with its defaults filled and ~ expanded", async () => {
    const file = join(folder, "hosts.yaml");
    await writeFile(
      file,
      [
        "hosts:",
        "  - name: lab",
        "    kind: ray",
        "    address: ray-head.lab.example:6379",
        "    python: ~/venvs/ray/bin/python",
        "    gpus_per_run: 1",
        "    environment: { HF_HOME: /data/hf }",
        "    workdir: ~/shared/a3r",
        "    a3r: /opt/a3r/bin/a3r",
        "",
      ].join("\n"),
    );
    const { hosts } = await loadHostsFile(file, { home: "/home/me" });
    expect(hosts[0]).toEqual({
      name: "lab",
      kind: "ray",
      address: "ray-head.lab.example:6379",
      python: "/home/me/venvs/ray/bin/python",
      namespace: "a3r",
      gpus_per_run: 1,
      cpus_per_run: 1,
      environment: { HF_HOME: "/data/hf" },
      max_restarts: 3,
      workdir: "/home/me/shared/a3r",
      a3r: "/opt/a3r/bin/a3r",
    });
  });

  it("refuses a bad address or environment name at its line, with the fix", () => {
    const entry = (extra: string) => `hosts:\n  - name: lab\n    kind: ray\n    workdir: /shared\n${extra}`;
    expect(() => parseHostsText(entry("    address: http://head:8265\n"), "hosts.yaml")).toThrow(
      expect.objectContaining({ where: "hosts.yaml:5", message: expect.stringContaining('address (host "lab")'), hint: expect.stringContaining("host:port") }),
    );
    expect(() => parseHostsText(entry("    address: head:6379\n    environment: { 'BAD NAME': x }\n"), "hosts.yaml")).toThrow(
      expect.objectContaining({ where: "hosts.yaml:6", hint: expect.stringContaining("variable names (letters, digits and '_')") }),
    );
  });

  it("says the cluster's nodes with their free GPUs and CPUs", () => {
    const nodes = [
      { id: "a", address: "127.0.0.1", alive: true, cpus: 32, gpus: 8, free_cpus: 30, free_gpus: 6 },
      { id: "b", address: "127.0.0.2", alive: true, cpus: 32, gpus: 8, free_cpus: 32, free_gpus: 8 },
      { id: "c", address: "127.0.0.3", alive: false, cpus: 32, gpus: 8, free_cpus: 0, free_gpus: 0 },
    ];
    expect(describeNodes(nodes)).toEqual({
      gpus: 16,
      text: "16 GPUs (14 free), 64 CPUs (62 free) on 2 nodes (+1 down): 127.0.0.1 6/8 GPU 30/32 CPU, 127.0.0.2 8/8 GPU 32/32 CPU",
    });
  });
});
