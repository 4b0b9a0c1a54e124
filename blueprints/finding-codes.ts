/**
 * The stable codes of blueprint findings. People search for them and tests assert them,
 * so a code is never renamed; a new problem gets a new code.
 */
export const findingCodes = {
  FILE_NOT_FOUND: "the file does not exist",
  FILE_UNREADABLE: "the file cannot be read",
  FILE_TOO_LARGE: "the file is larger than a blueprint can be (1 MiB)",
  FILE_BINARY: "the file holds NUL bytes or is not UTF-8 text",
  FRONT_MATTER_NOT_YAML: "the front matter names a language other than YAML (it is never evaluated)",
  FRONT_MATTER_UNCLOSED: "the front matter has no closing ---",
  FRONT_MATTER_MISSING: "an a3r blueprint has no front matter",
  FRONT_MATTER_TOO_LARGE: "the front matter is larger than 64 KiB",
  YAML_INVALID: "the front matter is not valid YAML",
  YAML_WARNING: "the YAML parser warned, e.g. about an unknown !tag read as plain text",
  FRONT_MATTER_INVALID: "a front-matter field does not match the blueprint schema",
  SECTION_MISSING: "a required section is missing",
  SECTION_EMPTY: "a section has no content",
  SECTION_DUPLICATE: "a section appears twice",
  SECTION_UNKNOWN: "a ## heading is not one of the blueprint sections",
  PATH_RELATIVE: "a path is not absolute",
  PATH_NOT_FOUND: "a path does not exist on this machine",
  RESULT_DIR_OUTSIDE_ROOTS: "the result directory is outside the allowed roots",
  TIME_BUDGET_INVALID: "the time budget is not a duration",
  COMMAND_FORBIDDEN: "the command matches an error rule of the command policy",
  COMMAND_DISCOURAGED: "the command matches a warning rule of the command policy",
  COMMAND_LITERAL_SECRET: "the command holds a secret's value (a key, token or password) instead of a reference to an environment variable",
  ID_INVALID: "the blueprint id is not a safe name",
  ID_DUPLICATE: "two blueprints of one set share an id",
  OVERRIDE_INVALID: "an override, merged into the config the way the worker merges it, fails the engine's config schema",
} as const;

export type FindingCode = keyof typeof findingCodes;
