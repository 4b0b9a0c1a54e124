import type { Finding } from "./finding.ts";

/**
 * What campaign audits need from blueprints/: a blueprint's id and its own findings.
 * Left out: everything else a blueprint holds; campaign code never parses markdown.
 */
export interface BlueprintInspector {
  /** The id in the file's front matter; throws when the file cannot be read as a blueprint. */
  readId(path: string): Promise<string>;
  audit(path: string, options: { checkPaths?: boolean; allowedRoots?: string[] }): Promise<Finding[]>;
}

// Loaded on first use so that `a3r` starts fast and commands that never touch a
// blueprint do not load the markdown and YAML parsers.
const loadBlueprints = () => import("../blueprints/index.ts");

export const blueprintInspector: BlueprintInspector = {
  async readId(path) {
    const { readBlueprintFile } = await loadBlueprints();
    return (await readBlueprintFile(path)).id;
  },
  async audit(path, options) {
    const { auditBlueprintFile } = await loadBlueprints();
    return auditBlueprintFile(path, options);
  },
};
