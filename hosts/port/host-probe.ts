import { execFile } from "node:child_process";
import { shellQuote } from "../../core/shell-quote.ts";

/**
 * What `a3r hosts check` and GPU detection learn about a host from one shell script, run
 * locally or over ssh: whether a3r answers, which GPUs nvidia-smi lists (none when it is
 * missing or fails) and the free disk under the work dir (the nearest existing folder).
 *
 * Left out: GPU memory and utilisation (the scheduler counts whole GPUs) and CPU count.
 */
export interface ProbeResult {
  a3r: { ok: boolean; detail: string };
  /** GPU descriptions, e.g. "0, NVIDIA H100 80GB HBM3"; empty = none. */
  gpus: string[];
  gpuDetail: string;
  /** Free bytes under the work dir, when df answered. */
  freeDiskBytes: number | null;
}

export function probeScript(a3r: string, workdir: string): string {
  return [
    `echo @@a3r; if out=$(timeout 60 ${a3r} --version 2>&1 </dev/null); then echo "ok $(echo "$out" | tail -n 1)"; else echo "fail $(echo "$out" | tail -n 2 | tr '\\n' ' ')"; fi`,
    `echo @@gpus; if command -v nvidia-smi >/dev/null 2>&1; then timeout 30 nvidia-smi --query-gpu=index,name --format=csv,noheader 2>&1 || echo "nvidia-smi failed"; else echo "no nvidia-smi"; fi`,
    `echo @@disk; p=${shellQuote(workdir)}; case "$p" in "~/"*) p="$HOME/\${p#"~/"}";; esac; while [ ! -e "$p" ]; do p=$(dirname "$p"); done; df -Pk "$p" | tail -n 1`,
  ].join("\n");
}

export function parseProbe(stdout: string): ProbeResult {
  const sections: Record<string, string[]> = {};
  let current = "";
  for (const line of stdout.split("\n")) {
    const marker = /^@@(\w+)$/.exec(line);
    if (marker) {
      current = marker[1]!;
      sections[current] = [];
    } else if (current && line.trim() !== "") {
      sections[current]!.push(line.trim());
    }
  }
  const a3rLine = sections.a3r?.[0] ?? "fail no answer";
  const gpuLines = sections.gpus ?? [];
  const gpus = gpuLines.filter((line) => /^\d+\s*,/.test(line));
  const diskFields = (sections.disk?.[0] ?? "").split(/\s+/);
  const available = Number(diskFields[3]);
  return {
    a3r: { ok: a3rLine.startsWith("ok"), detail: a3rLine.replace(/^(ok|fail)\s*/, "") },
    gpus,
    gpuDetail: gpus.length > 0 ? `${gpus.length}` : gpuLines[0] === "no nvidia-smi" || gpuLines.length === 0 ? "none" : `none (${gpuLines[0]})`,
    freeDiskBytes: Number.isFinite(available) && diskFields.length >= 4 ? available * 1024 : null,
  };
}

/** Runs the probe on this machine. */
export function probeLocally(a3r: string, workdir: string, timeoutMs = 90_000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    execFile("sh", ["-c", probeScript(a3r, workdir)], { timeout: timeoutMs, maxBuffer: 1024 * 1024 }, (_error, stdout) => resolve(parseProbe(String(stdout))));
  });
}

export function formatBytes(bytes: number | null): string {
  if (bytes === null) return "?";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value >= 10 || unit === 0 ? 0 : 1)} ${units[unit]}`;
}
