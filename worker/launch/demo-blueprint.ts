import { readFile, writeFile, mkdir } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { checkoutRoot } from "../../core/checkout-root.ts";

/**
 * The example demo blueprints are written for one machine (checkout at /work/main, node at
 * /usr/bin/node, results under /tmp/a3r-runs), because a blueprint's paths are absolute by
 * contract. `a3r worker demo` rewrites those three prefixes for the machine it runs on and
 * writes the localized blueprint and its config under the runs folder, so the demo runs
 * from any fresh clone without editing files.
 */
export type DemoMode = "swarm" | "classic";

const exampleRoot = "/work/main";
const exampleNode = "/usr/bin/node";
const exampleResults = "/tmp/a3r-runs";

export { checkoutRoot };

const demoFiles: Record<DemoMode, { blueprint: string; config: string }> = {
  swarm: { blueprint: "examples/blueprints/swarm-demo.md", config: "examples/blueprints/swarm-demo.swarm.yaml" },
  classic: { blueprint: "examples/blueprints/classic-demo.md", config: "examples/blueprints/classic-demo.config.json" },
};

export function localizeDemoText(text: string, places: { root: string; node: string; runsDir: string; configCopy: string; configOriginal: string }): string {
  return text
    .replaceAll(places.configOriginal, places.configCopy)
    .replaceAll(exampleResults, places.runsDir)
    .replaceAll(exampleNode, places.node)
    .replaceAll(exampleRoot, places.root);
}

/** Writes `<runsDir>/<id>.md` and its config copy for this machine; returns the blueprint path. */
export async function prepareDemoBlueprint(mode: DemoMode, options: { runsDir: string; root?: string; node?: string }): Promise<string> {
  const root = options.root ?? checkoutRoot;
  const runsDir = resolve(options.runsDir);
  const files = demoFiles[mode];
  const configCopy = join(runsDir, basename(files.config));
  const places = { root, node: options.node ?? process.execPath, runsDir, configCopy, configOriginal: `${exampleRoot}/${files.config}` };
  await mkdir(runsDir, { recursive: true });
  const [blueprintText, configText] = await Promise.all([readFile(join(root, files.blueprint), "utf8"), readFile(join(root, files.config), "utf8")]);
  const blueprintPath = join(runsDir, basename(files.blueprint));
  await writeFile(configCopy, localizeDemoText(configText, places));
  await writeFile(blueprintPath, localizeDemoText(blueprintText, places));
  return blueprintPath;
}
