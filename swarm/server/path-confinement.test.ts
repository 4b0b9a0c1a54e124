import { mkdir, mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PathConfinement } from "./path-confinement.ts";

describe("PathConfinement", () => {
  it("accepts paths under a root (existing or not) and refuses the rest, naming the field", async () => {
    const root = await mkdtemp(join(tmpdir(), "a3r-confine-"));
    try {
      await mkdir(join(root, "runs"));
      await symlink("/etc", join(root, "runs", "escape"));
      const confinement = new PathConfinement([join(root, "runs")]);
      expect(confinement.check("experiment_dir", join(root, "runs", "new", "deep"))).toBe(join(root, "runs", "new", "deep"));
      expect(confinement.check("experiment_dir", join(root, "runs"))).toBe(join(root, "runs"));
      for (const outside of ["/etc/cron.d", join(root, "runs", "..", "other"), join(root, "runs", "escape", "x"), join(root, "runs-sibling")])
        expect(() => confinement.check("experiment_dir", outside), outside).toThrow(/^experiment_dir: .* is outside the server's allowed roots/);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
