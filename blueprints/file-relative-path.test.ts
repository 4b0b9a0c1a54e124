import { mkdtemp, readFile, rm, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { blueprintTemplate } from "./blueprint-template.ts";
import { auditBlueprint } from "./audit-blueprint.ts";
import { blueprintTextForCopy, readBlueprintFile } from "./blueprint-file.ts";
import { parseBlueprint } from "./parse-blueprint.ts";

const folders: string[] = [];
afterEach(async () => {
  await Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
});

function relativeBlueprint(): string {
  return blueprintTemplate({ id: "rel", mode: "classic" })
    .replace(/## Codebase\n\n`[^`]*`/, "## Codebase\n\n`../code`")
    .replace(/## Virtual Environment\n\n`[^`]*`/, "## Virtual Environment\n\n`node`")
    .replace(/## Configuration\n\n[^\n]*/, "## Configuration\n\n`./cfg.json`");
}

describe("paths relative to the blueprint file", () => {
  it("resolves ./ and ../ against the blueprint's folder when it is read from a file", async () => {
    const folder = await mkdtemp(join(tmpdir(), "a3r-rel-"));
    folders.push(folder);
    await mkdir(join(folder, "blueprints"));
    const file = join(folder, "blueprints", "rel.md");
    await writeFile(file, relativeBlueprint());
    const blueprint = await readBlueprintFile(file);
    expect(blueprint.codebase).toBe(join(folder, "code"));
    expect(blueprint.config).toBe(join(folder, "blueprints", "cfg.json"));
    expect(blueprint.venv).toBe("node");
    expect(auditBlueprint(relativeBlueprint(), { file }).filter((finding) => finding.code === "PATH_RELATIVE")).toEqual([]);

    // A copy made for another folder (a launcher's run folder) carries them absolute.
    const copy = await blueprintTextForCopy(file);
    const elsewhere = parseBlueprint(copy, "/somewhere/else/blueprint.md");
    expect(elsewhere.codebase).toBe(join(folder, "code"));
    expect(elsewhere.config).toBe(join(folder, "blueprints", "cfg.json"));
    expect(elsewhere.venv).toBe("node");
  });

  it("keeps a blueprint with absolute paths byte for byte when copied", async () => {
    const folder = await mkdtemp(join(tmpdir(), "a3r-rel-"));
    folders.push(folder);
    const file = join(folder, "abs.md");
    await writeFile(file, blueprintTemplate({ id: "abs", mode: "classic" }));
    expect(await blueprintTextForCopy(file)).toBe(await readFile(file, "utf8"));
  });

  it("still refuses a bare relative path, and ./ on standard input (no file to be relative to)", () => {
    const bare = auditBlueprint(relativeBlueprint().replace("`../code`", "`code/here`"), { file: "/b/rel.md" });
    expect(bare.find((finding) => finding.code === "PATH_RELATIVE")?.message).toMatch(/Codebase path "code\/here" is not absolute/);
    const stdin = auditBlueprint(relativeBlueprint());
    expect(stdin.find((finding) => finding.code === "PATH_RELATIVE")?.hint).toMatch(/relative to the blueprint's own file/);
  });
});
