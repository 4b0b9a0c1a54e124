import { afterEach, describe, expect, it } from "vitest";
import { cp, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { auditBlueprintFile, readBlueprintFile } from "../../blueprints/index.ts";
import { checkoutRoot, prepareDemoBlueprint } from "./demo-blueprint.ts";

const folders: string[] = [];
afterEach(async () => {
  await Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
});

async function tempFolder(): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), "a3r-demo-"));
  folders.push(folder);
  return folder;
}

describe("prepareDemoBlueprint", () => {
  it.each(["swarm", "classic"] as const)("writes the %s demo with paths of this checkout and results under the runs folder", async (mode) => {
    const folder = await tempFolder();
    const path = await prepareDemoBlueprint(mode, { runsDir: folder });
    const blueprint = await readBlueprintFile(path);
    expect(blueprint.codebase.startsWith(checkoutRoot)).toBe(true);
    expect(blueprint.venv).toBe("node");
    expect(blueprint.config).toBe(join(checkoutRoot, "examples/blueprints", mode === "swarm" ? "swarm-demo.swarm.yaml" : "classic-demo.config.json"));
    expect(blueprint.resultDir).toBe(join(folder, `${mode}-demo`));
    expect(await readFile(path, "utf8")).not.toMatch(/\/tmp\/a3r-runs/);
    const findings = await auditBlueprintFile(path, { allowedRoots: [folder], checkPaths: true });
    expect(findings.filter((finding) => finding.severity === "error")).toEqual([]);
  });

  it("follows the checkout wherever it lies (the examples' paths are relative to their files)", async () => {
    const clone = await tempFolder();
    await cp(join(checkoutRoot, "examples"), join(clone, "examples"), { recursive: true });
    const path = await prepareDemoBlueprint("swarm", { runsDir: join(clone, "runs"), root: clone });
    const blueprint = await readBlueprintFile(path);
    expect(blueprint.codebase).toBe(clone);
    expect(blueprint.config).toBe(join(clone, "examples/blueprints/swarm-demo.swarm.yaml"));
  });
});
