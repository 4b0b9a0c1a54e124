import { afterEach, describe, expect, it } from "vitest";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeFileAtomic, writeJsonAtomic } from "./atomic-file.ts";

let folder: string | undefined;
afterEach(async () => {
  if (folder) await rm(folder, { recursive: true, force: true });
});

describe("writeFileAtomic", () => {
  it("creates parent folders, replaces content and leaves no temp files", async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-atomic-"));
    const path = join(folder, "nested", "status.json");
    await writeJsonAtomic(path, { state: "running" });
    await Promise.all(Array.from({ length: 20 }, (_, index) => writeFileAtomic(path, `{"n":${index}}`)));
    const parsed = JSON.parse(await readFile(path, "utf8")) as { n: number };
    expect(parsed.n).toBeGreaterThanOrEqual(0);
    expect(await readdir(join(folder, "nested"))).toEqual(["status.json"]);
  });
});
