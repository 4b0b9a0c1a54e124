import { afterEach, describe, expect, it } from "vitest";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { auditBlueprintFile, readBlueprintFile } from "../../blueprints/index.ts";
import { checkoutRoot, prepareDemoBlueprint } from "./demo-blueprint.ts";

let folder: string;
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe("prepareDemoBlueprint", () => {
  it.each(["swarm", "classic"] as const)("localizes the %s demo so its paths exist on this machine", async (mode) => {
    folder = await mkdtemp(join(tmpdir(), "a3r-demo-"));
    const path = await prepareDemoBlueprint(mode, { runsDir: folder, root: checkoutRoot, node: "/opt/node/bin/node" });
    const blueprint = await readBlueprintFile(path);
    expect(blueprint.codebase.startsWith(checkoutRoot)).toBe(true);
    expect(blueprint.venv).toBe("/opt/node/bin/node");
    expect(blueprint.config).toBe(join(folder, mode === "swarm" ? "swarm-demo.swarm.yaml" : "classic-demo.config.json"));
    expect(blueprint.resultDir).toBe(join(folder, `${mode}-demo`));
    const text = await readFile(path, "utf8");
    expect(text).not.toMatch(/\/tmp\/a3r-runs/);
    const findings = await auditBlueprintFile(path, { allowedRoots: [folder] });
    expect(findings.filter((finding) => finding.severity === "error")).toEqual([]);
  });
});
