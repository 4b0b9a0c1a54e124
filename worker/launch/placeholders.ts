import type { Overrides } from "../../blueprints/index.ts";
import { shellQuote } from "../../core/shell-quote.ts";

/**
 * How a run's values reach its command line. Overrides reach the program three ways at
 * once, so any trainer can pick one:
 *
 * 1. a copy of the blueprint's config file with the overrides merged in
 *    (`<result dir>/config/attempt-N.<ext>`, placed by blueprints/overrides/), passed as
 *    `{config}` and `A3R_CONFIG`;
 * 2. `A3R_OVERRIDES`, the overrides as one JSON object;
 * 3. `{overrides}` in the command: `key=value` words, shell-quoted (Hydra style).
 *
 * Every value put into a command here is shell-quoted or is a number a3r made: a value a
 * model chose (a diagnosis may set any override) never reaches the shell as syntax.
 */

/** `lr=5e-06 batch_size=16`, each word shell-quoted. */
export function overridesAsWords(overrides: Overrides): string {
  return Object.entries(overrides)
    .map(([key, value]) => shellQuote(`${key}=${String(value)}`))
    .join(" ");
}

/** The placeholders a command may use; unknown `{words}` are left alone (shell braces). */
export const placeholderNames = [
  "config",
  "overrides",
  "overrides_json",
  "port",
  "attempt",
  "result_dir",
  "checkpoint_dir",
  "metrics_file",
  "swarm_url",
  "resume",
] as const;
export type PlaceholderName = (typeof placeholderNames)[number];

export function substitutePlaceholders(command: string, values: Partial<Record<PlaceholderName, string>>): string {
  return command.replace(/\{([a-z_]+)\}/g, (whole, name: string) => {
    const value = (values as Record<string, string | undefined>)[name];
    return value === undefined ? whole : value;
  });
}
