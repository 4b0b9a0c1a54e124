import { describe, expect, it } from "vitest";
import { bwrapArguments, isWithin, joinNetworkPrefix, type SandboxSpec } from "./bwrap-command.ts";

const spec = (overrides: Partial<SandboxSpec> = {}): SandboxSpec => ({
  writable: ["/data/campaign/results/run-1"],
  readable: ["/home/ada/code", "/home/ada/.pyenv", "/opt/a3r"],
  hidden: ["/home/ada", "/data/campaign/results"],
  secretDirs: ["/home/ada/.ssh"],
  secretFiles: ["/home/ada/.netrc", "/etc/shadow"],
  devices: ["/dev/nvidia0", "/dev/nvidiactl"],
  network: "none",
  ...overrides,
});

/** The mounts in order, as `op path` (the source of a bind is its target here, /dev/null for files). */
function mounts(args: string[]): string[] {
  const out: string[] = [];
  for (let index = 0; index < args.length; index += 1) {
    const op = args[index]!;
    if (op === "--ro-bind" || op === "--bind" || op === "--dev-bind") {
      out.push(`${op} ${args[index + 2]}${args[index + 1] === "/dev/null" ? " (null)" : ""}`);
      index += 2;
    } else if (op === "--tmpfs" || op === "--dev" || op === "--proc") {
      out.push(`${op} ${args[index + 1]}`);
      index += 1;
    } else if (op === "--perms") index += 1;
  }
  return out;
}

describe("bwrapArguments", () => {
  it("hides first, binds back what the run needs, then covers the credentials; the run's folder is the one writable bind", () => {
    expect(mounts(bwrapArguments(spec()))).toEqual([
      "--ro-bind /",
      "--dev /dev",
      "--tmpfs /dev/shm",
      "--proc /proc",
      "--tmpfs /tmp",
      "--tmpfs /home/ada",
      "--tmpfs /data/campaign/results",
      "--ro-bind /home/ada/.pyenv",
      "--ro-bind /home/ada/code",
      "--bind /data/campaign/results/run-1",
      "--ro-bind /etc/shadow (null)",
      "--dev-bind /dev/nvidia0",
      "--dev-bind /dev/nvidiactl",
    ]);
  });

  it("loopback only unless the run shares a namespace; never any capability; its own PID namespace dies with its parent", () => {
    const isolated = bwrapArguments(spec());
    expect(isolated).toContain("--unshare-net");
    expect(isolated.join(" ")).toContain("--unshare-pid --unshare-ipc --unshare-uts --cap-drop ALL --die-with-parent");
    expect(bwrapArguments(spec({ network: "shared" }))).not.toContain("--unshare-net");
  });

  it("a codebase that is the home folder itself still hides the credentials inside it", () => {
    const args = mounts(bwrapArguments(spec({ readable: ["/home/ada"], hidden: ["/data/campaign/results"] })));
    expect(args).toContain("--tmpfs /home/ada/.ssh");
    expect(args).toContain("--ro-bind /home/ada/.netrc (null)");
  });

  it("sibling results inside a folder that is bound back are hidden again, after it", () => {
    const args = mounts(bwrapArguments(spec({ readable: ["/tmp/work"], writable: ["/tmp/work/results/run-1"], hidden: ["/tmp/work/results"] })));
    const bound = args.indexOf("--ro-bind /tmp/work");
    expect(bound).toBeGreaterThan(0);
    expect(args.lastIndexOf("--tmpfs /tmp/work/results")).toBeGreaterThan(bound);
    expect(args.indexOf("--bind /tmp/work/results/run-1")).toBeGreaterThan(args.lastIndexOf("--tmpfs /tmp/work/results"));
  });

  it("never hides the run's own folder or /", () => {
    const args = mounts(bwrapArguments(spec({ hidden: ["/", "/data/campaign/results/run-1/output"] })));
    expect(args).not.toContain("--tmpfs /");
    expect(args).not.toContain("--tmpfs /data/campaign/results/run-1/output");
  });
});

describe("isWithin and joinNetworkPrefix", () => {
  it("compares whole path segments", () => {
    expect(isWithin("/home/ada/code", "/home/ada")).toBe(true);
    expect(isWithin("/home/ada", "/home/ada")).toBe(true);
    expect(isWithin("/home/adam", "/home/ada")).toBe(false);
    expect(isWithin("/home", "/home/ada")).toBe(false);
  });

  it("joins the server's network namespace; without root, its user namespace too", () => {
    expect(joinNetworkPrefix("/proc/42/ns/net", true)).toEqual(["nsenter", "--net=/proc/42/ns/net", "--"]);
    expect(joinNetworkPrefix("/proc/42/ns/net", false)).toEqual([
      "nsenter",
      "--user=/proc/42/ns/user",
      "--net=/proc/42/ns/net",
      "--preserve-credentials",
      "--",
    ]);
  });
});
