import { createHash } from "node:crypto";

/**
 * The fingerprint of an SSH host key exactly as `ssh-keygen -l` prints it: "SHA256:"
 * followed by the unpadded base64 of the SHA-256 of the key blob.
 */
export function sshFingerprint(keyBlob: Buffer): string {
  return `SHA256:${createHash("sha256").update(keyBlob).digest("base64").replace(/=+$/, "")}`;
}

export type HostKeyVerdict = { accepted: true; fingerprint: string } | { accepted: false; fingerprint: string; reason: "unknown" | "mismatch" };

/** Refuses unknown and changed keys: a3r never trusts a host key on first use. */
export function verifyHostKey(keyBlob: Buffer, pinned: string | undefined): HostKeyVerdict {
  const fingerprint = sshFingerprint(keyBlob);
  if (pinned === undefined) return { accepted: false, fingerprint, reason: "unknown" };
  return fingerprint === pinned ? { accepted: true, fingerprint } : { accepted: false, fingerprint, reason: "mismatch" };
}
