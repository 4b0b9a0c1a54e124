/**
 * How much a finding weighs: an error stops what was checked (a blueprint is not run, a
 * command is refused), a warning is reported and let through. Shared by the blueprint
 * audit and its command policy (blueprints/), which a folder of its own would not be.
 */
export type Severity = "error" | "warning";
