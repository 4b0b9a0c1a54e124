import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { readBlueprintFile } from "../../blueprints/index.ts";
import { A3rError } from "../../core/errors.ts";
import { draftTopic, parseKnobFlag, type TopicDraft } from "../../leader/index.ts";

/** What `a3r topic new` and free-text `a3r research` share: the flags that shape a draft. */
export interface DraftFlags {
  knob?: string[];
  metric?: string;
  command?: string;
  seeds?: number;
  maxSteps?: number;
}

/** Collects a repeatable flag's values (commander's reducer). */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/**
 * A topic drafted from a blueprint (`.md`) or a config (`.yaml`, `.yml`, `.json`), for a
 * topic that will be written to `topicFile`. Errors name the flag to fix.
 */
export async function draftFromFile(source: string, question: string, topicFile: string, flags: DraftFlags): Promise<TopicDraft> {
  const path = resolve(source);
  const knobs: Record<string, (number | string | boolean)[]> = {};
  for (const flag of flags.knob ?? []) {
    const parsed = parseKnobFlag(flag);
    if (!parsed)
      throw new A3rError("USAGE", `--knob ${flag} is not key=value1,value2`, {
        where: "--knob",
        hint: "for example --knob optimizer.lr=0.1,0.2,0.5 (two values at least)",
      });
    knobs[parsed[0]] = parsed[1];
  }
  const metric = flags.metric === undefined ? undefined : metricFlag(flags.metric);
  const blueprint = path.endsWith(".md") ? await readBlueprintFile(path) : undefined;
  const configPath = blueprint ? blueprint.config : path;
  const config = configPath === null ? undefined : { path: configPath, values: await readConfig(configPath) };
  try {
    return draftTopic({
      question,
      ...(blueprint ? { blueprint } : {}),
      ...(config ? { config } : {}),
      knobs,
      ...(metric ? { metric } : {}),
      ...(flags.command ? { command: flags.command } : {}),
      ...(flags.seeds ? { seeds: flags.seeds } : {}),
      ...(flags.maxSteps ? { maxSteps: flags.maxSteps } : {}),
      topicFile,
    });
  } catch (error) {
    const message = (error as Error).message;
    throw new A3rError("USAGE", message, {
      where: message.includes("--knob") ? "--knob" : "--command",
      hint: `${source} does not say it; give it on the command line`,
    });
  }
}

function metricFlag(flag: string): { name: string; goal: "maximize" | "minimize" } {
  const [name = "", goal = "maximize"] = flag.split(":");
  if (!/^[A-Za-z_][\w./-]{0,80}$/.test(name) || (goal !== "maximize" && goal !== "minimize"))
    throw new A3rError("USAGE", `--metric ${flag} is not NAME or NAME:maximize|minimize`, {
      where: "--metric",
      hint: "for example --metric reward_mean or --metric loss:minimize",
    });
  return { name, goal };
}

async function readConfig(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new A3rError("FILE_NOT_FOUND", `cannot read ${path}: ${(error as Error).message}`, {
      where: path,
      hint: "give a blueprint (.md) or a config file (.yaml, .json)",
    });
  }
  let values: unknown;
  try {
    values = path.endsWith(".json") ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new A3rError("CONFIG_INVALID", `${path} does not parse: ${(error as Error).message}`, {
      where: path,
      hint: "fix the file, or draft from its blueprint",
    });
  }
  if (values === null || typeof values !== "object" || Array.isArray(values))
    throw new A3rError("CONFIG_INVALID", `${path} is not a mapping of config keys`, {
      where: path,
      hint: "give the swarm.yaml or the config the blueprint names",
    });
  return values as Record<string, unknown>;
}
