/**
 * Quotes one word for a POSIX shell. Words made only of characters no shell treats
 * specially stay as they are (so logs and attempts.md read naturally); anything else is
 * put in single quotes, with embedded single quotes closed, escaped and reopened. The one
 * quoting rule for every command line a3r writes: process groups, ssh, Slurm, a run's
 * placeholders.
 */
export function shellQuote(text: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}
