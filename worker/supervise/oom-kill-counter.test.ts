import { describe, expect, it } from "vitest";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { oomKillerFact, readOomKillCount } from "./oom-kill-counter.ts";

describe("OOM-killer counter", () => {
  it("reads oom_kill from a vmstat file, null when absent or unreadable", async () => {
    const dir = await mkdtemp(join(tmpdir(), "a3r-vmstat-"));
    try {
      await writeFile(join(dir, "vmstat"), "nr_free_pages 10\noom_kill 7\npgfault 3\n");
      await writeFile(join(dir, "old"), "nr_free_pages 10\n");
      expect(readOomKillCount(join(dir, "vmstat"))).toBe(7);
      expect(readOomKillCount(join(dir, "old"))).toBeNull();
      expect(readOomKillCount(join(dir, "missing"))).toBeNull();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("says seen only when the counter moved, and nothing when either end is unknown", () => {
    expect(oomKillerFact(3, 4)).toBe("seen");
    expect(oomKillerFact(3, 3)).toBe("not_seen");
    expect(oomKillerFact(null, 3)).toBeUndefined();
    expect(oomKillerFact(3, null)).toBeUndefined();
  });
});
