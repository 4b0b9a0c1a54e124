import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import { A3rError } from "../../core/errors.ts";
import { type ConfigObject, isConfigObject } from "./override-keys.ts";

/**
 * Reads a run's config file (YAML, or JSON by its extension) as the mapping overrides are
 * merged into; the one reader the worker, the leader's audit and `blueprint validate` use.
 * Errors name the file and say what to fix.
 */
export async function readConfigFile(path: string): Promise<ConfigObject> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new A3rError("FILE_NOT_FOUND", `cannot read the configuration ${path}: ${(error as Error).message}`, {
      where: path,
      hint: "fix the Configuration section of the blueprint (an absolute path, or none)",
    });
  }
  let value: unknown;
  try {
    value = path.endsWith(".json") ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new A3rError("CONFIG_INVALID", `the configuration ${path} does not parse: ${(error as Error).message}`, {
      where: path,
      hint: "the worker merges overrides into a YAML or JSON mapping; fix the file",
    });
  }
  if (value === null || value === undefined) return {};
  if (!isConfigObject(value)) {
    throw new A3rError("CONFIG_INVALID", `the configuration ${path} is not a mapping`, {
      where: path,
      hint: "the top level of the config must be key: value pairs",
    });
  }
  return value as ConfigObject;
}
