/**
 * The swarm's own error type (swarm/ imports nothing from the rest of a3r). It names the
 * file, line and field a person must change, and says how.
 */
export class SwarmConfigError extends Error {
  readonly file: string;
  readonly line: number | undefined;
  readonly field: string | undefined;
  readonly hint: string | undefined;

  constructor(message: string, options: { file: string; line?: number; field?: string; hint?: string }) {
    super(message);
    this.name = "SwarmConfigError";
    this.file = options.file;
    this.line = options.line;
    this.field = options.field;
    this.hint = options.hint;
  }

  /** "swarm.yaml:12" or "swarm.yaml" when the line is unknown. */
  get where(): string {
    return this.line === undefined ? this.file : `${this.file}:${this.line}`;
  }
}
