import { isSafeOverrideKey } from "./overrides/override-keys.ts";
import { z } from "zod";
import { parseDuration } from "../core/duration.ts";
import { commandRuleSchema } from "./command-policy.ts";

/** The version tag an a3r blueprint carries in its front matter. */
export const blueprintVersion = "blueprint/v1";

/** Safe as a folder name, a log key and a queue job id: no slash, no leading dot. */
export const blueprintIdPattern = /^[a-z0-9][a-z0-9._-]*$/;
export const blueprintIdMaxLength = 80;

export function isSafeBlueprintId(value: string): boolean {
  return value.length <= blueprintIdMaxLength && blueprintIdPattern.test(value);
}

const safeId = z
  .string()
  .max(blueprintIdMaxLength, `at most ${blueprintIdMaxLength} characters`)
  .regex(blueprintIdPattern, "lower-case letters, digits, '.', '_' and '-', starting with a letter or digit");

const durationText = z.union([z.string(), z.number()]).refine((value) => parseDuration(value) !== undefined, "a duration such as 20m, 4h or 1h30m");

export const blueprintModeSchema = z.enum(["swarm", "classic"]);

export const metricSchema = z.looseObject({
  name: z.string().min(1),
  goal: z.enum(["maximize", "minimize"]),
});

/**
 * The front matter of an a3r blueprint. Unknown keys are kept (a leader may add its own
 * bookkeeping, and they must survive a round trip); the known ones are checked.
 */
export const blueprintFrontMatterSchema = z.looseObject({
  a3r: z.literal(blueprintVersion),
  id: safeId,
  campaign: safeId.optional(),
  stage: z.int().nonnegative().optional(),
  mode: blueprintModeSchema,
  hypothesis: z.string().optional(),
  gpus: z.int().nonnegative().optional(),
  seed: z.int().optional(),
  first_signal_timeout: durationText.optional(),
  /**
   * How many steps the run is planned to make (else a `max_steps` of the overrides or the
   * configuration): an exit 0 before it is `failed: stopped at step N of M` (worker/rules/planned-steps.ts).
   */
  expected_steps: z.int().positive().optional(),
  metric: metricSchema.optional(),
  prediction: z.string().optional(),
  overrides: z
    .record(z.string(), z.unknown())
    .superRefine((overrides, context) => {
      for (const key of Object.keys(overrides)) {
        if (!isSafeOverrideKey(key))
          context.addIssue({
            code: "custom",
            path: [key],
            message: "not a dotted config path such as optimizer.lr (__proto__, constructor and prototype are refused)",
          });
      }
    })
    .optional(),
  /** The campaign's command rules on top of the defaults (see `blueprintCommandRules`). */
  command_rules: z.array(commandRuleSchema).optional(),
  /** Model-provider keys the run's processes may see (withheld otherwise; see worker/launch/attempt-plan.ts). */
  /** Whether the run's commands execute in bubblewrap (worker/launch/sandbox-plan.ts); default: bwrap where it works. */
  sandbox: z.enum(["bwrap", "none"]).optional(),
  /** `host`: the sandboxed run keeps the host's network (downloads, remote APIs); default: loopback only. */
  network: z.enum(["loopback", "host"]).optional(),
  env_passthrough: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name")).optional(),
});

export type BlueprintFrontMatter = z.infer<typeof blueprintFrontMatterSchema>;

/**
 * AgentJet blueprints usually have no front matter; when they do, every field is optional
 * (id and mode are derived from the sections instead).
 */
export const agentjetFrontMatterSchema = blueprintFrontMatterSchema.partial();
