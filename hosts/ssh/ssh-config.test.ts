import { describe, expect, it } from "vitest";
import { matchesHostPattern, resolveSshAlias } from "./ssh-config.ts";

const config = `
# global defaults come first and apply to every host
IdentityFile ~/.ssh/global_key

Host gpu-*  !gpu-legacy
  HostName %h.cluster.example.org
  User trainer
  Port=2222

Host gpu-legacy
  HostName gpu-node.lab.example
  User old

Host box
  hostname 127.0.0.1
  IdentityFile "~/keys/box key"

Match host *.example.org
  User matched

Host *
  User fallback
  Port 22
`;

describe("resolveSshAlias", () => {
  it("takes the first value of each setting, as OpenSSH does, and expands %h and ~", () => {
    expect(resolveSshAlias(config, "gpu-7", "/home/me")).toEqual({
      hostName: "gpu-7.cluster.example.org",
      port: 2222,
      user: "trainer",
      identityFiles: ["/home/me/.ssh/global_key"],
      ignored: ["Match at line 18"],
    });
  });

  it("honours negated patterns: a negated match excludes the whole Host line", () => {
    const legacy = resolveSshAlias(config, "gpu-legacy", "/home/me");
    expect(legacy.hostName).toBe("gpu-node.lab.example");
    expect(legacy.user).toBe("old");
    expect(legacy.port).toBe(22);
  });

  it("accumulates identity files, keeps quoted paths, and falls back to Host *", () => {
    const box = resolveSshAlias(config, "box", "/home/me");
    expect(box.identityFiles).toEqual(["/home/me/.ssh/global_key", "/home/me/keys/box key"]);
    expect(box.user).toBe("fallback");
    expect(box.hostName).toBe("127.0.0.1");
  });

  it("leaves everything undefined for an alias nothing matches except defaults", () => {
    const none = resolveSshAlias("Host a\n  User x\n", "b");
    expect(none).toEqual({ hostName: undefined, port: undefined, user: undefined, identityFiles: [], ignored: [] });
  });
});

describe("matchesHostPattern", () => {
  it("matches * and ? like OpenSSH globs, case-insensitively, and nothing else", () => {
    expect(matchesHostPattern("GPU-1", "gpu-?")).toBe(true);
    expect(matchesHostPattern("gpu-10", "gpu-?")).toBe(false);
    expect(matchesHostPattern("a.b.c", "*.c")).toBe(true);
    expect(matchesHostPattern("abc", "a.c")).toBe(false);
  });
});
