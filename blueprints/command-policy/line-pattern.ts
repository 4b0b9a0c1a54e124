import { LinearRegex, LinearRegexError } from "./linear-regex.ts";

/**
 * Caps on a campaign's `commands.allow` patterns, which share the linear engine (and its
 * 2000-state cap per pattern): matching a line costs (states) x (line length) per pattern.
 */
export const allowPatternLimits = { maxPatterns: 64, maxPatternLength: 2000 };

/**
 * A campaign's `commands.allow` pattern, matched against a whole command line in linear
 * time (the patterns come from a topic, possibly a model's: a V8 RegExp such as `(a+)+`
 * would hang the leader's review or the worker's approval check). Throws a LinearRegexError
 * naming what the engine cannot do (backreferences, lookarounds).
 */
export function wholeLinePattern(source: string): { test(line: string): boolean } {
  if (source.length > allowPatternLimits.maxPatternLength) {
    throw new LinearRegexError(`a pattern of ${source.length} characters, over the cap of ${allowPatternLimits.maxPatternLength}`);
  }
  const regex = new LinearRegex(`^(?:${source})$`, "", { nestedRepeats: true });
  return { test: (line) => regex.exec(line) !== undefined };
}

/**
 * The allow patterns compiled, or a throw naming the first one past the count cap, or the
 * pattern and what the engine refuses in it (`wholeLinePattern`).
 */
export function allowPatterns(sources: readonly string[]): { test(line: string): boolean }[] {
  if (sources.length > allowPatternLimits.maxPatterns) {
    throw new LinearRegexError(
      `${sources.length} allow patterns, over the cap of ${allowPatternLimits.maxPatterns} (pattern ${allowPatternLimits.maxPatterns + 1}, "${sources[allowPatternLimits.maxPatterns]!.slice(0, 60)}", is past it)`,
    );
  }
  return sources.map((source) => {
    try {
      return wholeLinePattern(source);
    } catch (error) {
      if (error instanceof LinearRegexError) throw new LinearRegexError(`allow pattern "${source.slice(0, 60)}": ${error.message}`);
      throw error;
    }
  });
}
