/** Exit codes of every `a3r` command. */
export const exitCode = {
  ok: 0,
  /** Findings, a failed run, or an error in the input the command was given. */
  failure: 1,
  /** The command line itself is wrong: unknown flag, missing argument. */
  usage: 2,
} as const;
