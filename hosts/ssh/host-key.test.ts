import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sshFingerprint, verifyHostKey } from "./host-key.ts";

describe("sshFingerprint", () => {
  it("prints exactly what ssh-keygen -l prints for the same key", () => {
    const folder = mkdtempSync(join(tmpdir(), "a3r-hostkey-"));
    try {
      execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(folder, "key")]);
      const blob = Buffer.from(readFileSync(join(folder, "key.pub"), "utf8").split(" ")[1]!, "base64");
      const printed = /SHA256:\S+/.exec(execFileSync("ssh-keygen", ["-l", "-f", join(folder, "key.pub")], { encoding: "utf8" }))![0];
      expect(sshFingerprint(blob)).toBe(printed);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe("verifyHostKey", () => {
  const blob = Buffer.from("a host key blob");
  it("accepts only the pinned fingerprint and refuses unknown and changed keys", () => {
    const fingerprint = sshFingerprint(blob);
    expect(verifyHostKey(blob, fingerprint)).toEqual({ accepted: true, fingerprint });
    expect(verifyHostKey(blob, undefined)).toEqual({ accepted: false, fingerprint, reason: "unknown" });
    expect(verifyHostKey(blob, "SHA256:other")).toEqual({ accepted: false, fingerprint, reason: "mismatch" });
  });
});
