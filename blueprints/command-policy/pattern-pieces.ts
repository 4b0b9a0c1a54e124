/**
 * The pieces a ReDoS checker must prove linear for a default rule's pattern to be linear.
 * recheck's exact checker reads no lookarounds, and the defaults are written as
 * alternations of `^HEAD(?=.*A)(?=.*B)...`. Anchored, each lookahead runs at one position
 * only; there `.*A` backtracks through every later position and tries A at each, which
 * is the very work of an unanchored search for A. So the pieces are, per alternative, the
 * alternative without its lookaheads, and each lookahead's A searched unanchored (a body
 * that does not start with `.*`, `[^|]*` or `[^ ]*` is checked after the head, as `^HEAD(?:body)`).
 * Throws on a shape that argument does not cover (an unanchored alternative with a
 * lookaround, a lookbehind, a negative or nested lookahead), so such a rule cannot pass.
 */
export function linearPieces(pattern: string): string[] {
  const pieces: string[] = [];
  for (const alternative of topLevelAlternatives(pattern)) {
    let main = "";
    const lookaheads: string[] = [];
    let i = 0;
    while (i < alternative.length) {
      if (alternative.startsWith("(?=", i)) {
        const end = closingParen(alternative, i);
        const body = alternative.slice(i + 3, end);
        const scan = /^(?:\.\*|\[\^\|\]\*|\[\^ \]\*)/.exec(body);
        lookaheads.push(scan ? body.slice(scan[0].length) : `${main}(?:${body})`);
        i = end + 1;
        continue;
      }
      const next = tokenEnd(alternative, i);
      main += alternative.slice(i, next);
      i = next;
    }
    if (lookaheads.length > 0 && !alternative.startsWith("^")) throw new Error(`an unanchored alternative with a lookahead: ${alternative}`);
    for (const piece of [main, ...lookaheads]) {
      if (/\(\?<?[=!]/.test(stripClassesAndEscapes(piece))) throw new Error(`a lookaround the pieces cannot separate: ${piece}`);
    }
    pieces.push(main, ...lookaheads);
  }
  return pieces;
}

/** The pattern's alternatives at the top level (outside every group and class). */
export function topLevelAlternatives(pattern: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < pattern.length; i = tokenEnd(pattern, i)) {
    const c = pattern[i];
    if (c === "(") depth += 1;
    else if (c === ")") depth -= 1;
    else if (c === "|" && depth === 0) {
      parts.push(pattern.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(pattern.slice(start));
  return parts;
}

/** Where the token at `i` ends: an escape, a whole character class, or one character. */
function tokenEnd(pattern: string, i: number): number {
  if (pattern[i] === "\\") return i + 2;
  if (pattern[i] === "[") {
    let j = i + 1;
    if (pattern[j] === "^") j += 1;
    if (pattern[j] === "]") j += 1;
    while (j < pattern.length && pattern[j] !== "]") j += pattern[j] === "\\" ? 2 : 1;
    return j + 1;
  }
  return i + 1;
}

function closingParen(pattern: string, open: number): number {
  let depth = 0;
  for (let i = open; i < pattern.length; i = tokenEnd(pattern, i)) {
    if (pattern[i] === "(") depth += 1;
    else if (pattern[i] === ")") {
      depth -= 1;
      if (depth === 0) return i;
    }
  }
  throw new Error(`an unclosed group in ${pattern}`);
}

function stripClassesAndEscapes(pattern: string): string {
  let out = "";
  for (let i = 0; i < pattern.length; ) {
    const next = tokenEnd(pattern, i);
    out += pattern[i] === "\\" || pattern[i] === "[" ? "_" : pattern.slice(i, next);
    i = next;
  }
  return out;
}

/**
 * A piece without an unbounded repeat (`*`, `+`, `{n,}`) does bounded work at each start
 * position, so it is linear without asking a checker.
 */
export function isTriviallyLinear(piece: string): boolean {
  return !/[*+]|\{\d+,\}/.test(stripClassesAndEscapes(piece));
}
