import { describe, expect, it } from "vitest";
import { formatBytes, parseProbe, probeLocally } from "./host-probe.ts";

describe("parseProbe", () => {
  it("reads a3r, the GPUs nvidia-smi lists, and free disk from df", () => {
    const probe = parseProbe("@@a3r\nok 0.1.0\n@@gpus\n0, NVIDIA H100 80GB HBM3\n1, NVIDIA H100 80GB HBM3\n@@disk\n/dev/sda1 1000 400 2048 20% /data\n");
    expect(probe).toEqual({
      a3r: { ok: true, detail: "0.1.0" },
      gpus: ["0, NVIDIA H100 80GB HBM3", "1, NVIDIA H100 80GB HBM3"],
      gpuDetail: "2",
      freeDiskBytes: 2048 * 1024,
    });
  });

  it("says none for a host without nvidia-smi or with a failing one, and keeps a3r's failure", () => {
    expect(parseProbe("@@a3r\nfail sh: a3r: not found\n@@gpus\nno nvidia-smi\n@@disk\n").gpuDetail).toBe("none");
    const failing = parseProbe("@@a3r\nfail x\n@@gpus\nNVIDIA-SMI has failed\n@@disk\n");
    expect(failing.gpus).toEqual([]);
    expect(failing.gpuDetail).toBe("none (NVIDIA-SMI has failed)");
    expect(failing.a3r).toEqual({ ok: false, detail: "x" });
    expect(failing.freeDiskBytes).toBeNull();
  });
});

describe("probeLocally", () => {
  it("runs the probe on this machine: a missing command fails, disk is measured under a missing workdir", async () => {
    const probe = await probeLocally("/nonexistent/a3r", "/tmp/a3r-probe-does-not-exist/deeper");
    expect(probe.a3r.ok).toBe(false);
    expect(probe.freeDiskBytes).toBeGreaterThan(0);
    const working = await probeLocally("echo", "/tmp");
    expect(working.a3r.ok).toBe(true);
  });
});

describe("formatBytes", () => {
  it("uses binary units", () => {
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(200 * 1024 ** 3)).toBe("200 GiB");
    expect(formatBytes(null)).toBe("?");
  });
});
