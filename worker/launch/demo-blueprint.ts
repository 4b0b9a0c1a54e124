import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { readBlueprintFile, renderBlueprint } from "../../blueprints/index.ts";
import { checkoutRoot } from "../../core/checkout-root.ts";

/**
 * `a3r worker demo` runs one of the example blueprints with its results under the runs
 * folder. The examples name their paths relative to their own file, so the copy written
 * beside the results gets them absolute (reading the example resolves them), and only the
 * result directory changes. The swarm config needs no copy: the worker sets its
 * experiment_dir inside the result directory anyway.
 */
export type DemoMode = "swarm" | "classic";

export { checkoutRoot };

const demoBlueprints: Record<DemoMode, string> = {
  swarm: "examples/blueprints/swarm-demo.md",
  classic: "examples/blueprints/classic-demo.md",
};

/** Writes `<runsDir>/<id>.md` for this checkout; returns the blueprint path. */
export async function prepareDemoBlueprint(mode: DemoMode, options: { runsDir: string; root?: string }): Promise<string> {
  const runsDir = resolve(options.runsDir);
  const example = await readBlueprintFile(join(options.root ?? checkoutRoot, demoBlueprints[mode]));
  await mkdir(runsDir, { recursive: true });
  const path = join(runsDir, `${example.id}.md`);
  await writeFile(path, renderBlueprint({ ...example, resultDir: join(runsDir, example.id) }));
  return path;
}
