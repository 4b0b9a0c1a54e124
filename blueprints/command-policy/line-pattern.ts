import { LinearRegex } from "./linear-regex.ts";

/**
 * A campaign's `commands.allow` pattern, matched against a whole command line in linear
 * time (the patterns come from a topic, possibly a model's: a V8 RegExp such as `(a+)+`
 * would hang the leader's review or the worker's approval check). Throws a LinearRegexError
 * naming what the engine cannot do (backreferences, lookarounds).
 */
export function wholeLinePattern(source: string): { test(line: string): boolean } {
  const regex = new LinearRegex(`^(?:${source})$`, "", { nestedRepeats: true });
  return { test: (line) => regex.exec(line) !== undefined };
}
