/**
 * A linear-time matcher for the regular expressions a topic or blueprint adds to the
 * command policy. V8 backtracks, so a rule like `(a+)+$` (exponential) or `\s*\s*\s*$`
 * (polynomial) can hang every audit; the `re2` package needs a newer Node. So campaign
 * rules are compiled here into a Thompson NFA and run by simulating every state at once:
 * time is (text length) x (NFA size), whatever the pattern, and the NFA size is capped.
 *
 * Supported: JavaScript syntax for literals, escapes, classes, `.`, groups (capturing,
 * named, non-capturing), `|`, `* + ? {n} {n,} {n,m}` (lazy too), `^ $ \b \B`, with the flags
 * i, m, s, u. Refused with a reason: backreferences and lookarounds (no linear engine has
 * them), and, so a rule means the same on any engine, a repeated group that holds a
 * repeat or an alternation (`(a+)+`, `(a|a)*`), the shapes that backtrack exponentially.
 * Single characters are tested with a one-character RegExp built from the atom's own
 * source, so classes, escapes and case folding follow JavaScript exactly.
 */
export class LinearRegexError extends Error {}

type Node =
  | { kind: "char"; source: string }
  | { kind: "assert"; what: "^" | "$" | "b" | "B" }
  | { kind: "seq"; items: Node[] }
  | { kind: "alt"; options: Node[] }
  | { kind: "repeat"; node: Node; min: number; max: number };

/** NFA size beyond which a rule is refused: it bounds the cost per character. */
export const maxLinearStates = 2000;

export interface LinearMatch {
  index: number;
  text: string;
}

export class LinearRegex {
  private readonly states: State[];
  private readonly start: number;
  private readonly multiline: boolean;
  private readonly unicode: boolean;

  /**
   * `nestedRepeats`: accept `( --[\w=]+)*` and the like. The simulation is linear for them
   * too; they are refused by default only so a command rule means the same on any engine.
   */
  constructor(source: string, flags = "", options: { nestedRepeats?: boolean } = {}) {
    const parser = new Parser(source, flags);
    const tree = parser.parse();
    if (!options.nestedRepeats) refuseExponentialShapes(tree);
    const builder = new Builder(flags);
    this.start = builder.build(tree);
    this.states = builder.states;
    this.multiline = flags.includes("m");
    this.unicode = flags.includes("u");
  }

  /** The first match (earliest end, then leftmost start), or undefined. */
  exec(text: string): LinearMatch | undefined {
    let current: Thread[] = [];
    const onList = new Int32Array(this.states.length).fill(-1);
    let step = 0;
    let position = 0;
    for (;;) {
      const char = position < text.length ? this.charAt(text, position) : "";
      // Threads started later have lower priority: they are added after the existing ones.
      const next: Thread[] = [];
      const add = (list: Thread[], state: number, start: number) => {
        const stack: number[] = [state];
        while (stack.length > 0) {
          const id = stack.pop()!;
          if (onList[id] === step) continue;
          onList[id] = step;
          const node = this.states[id]!;
          if (node.kind === "split") {
            stack.push(node.b, node.a);
          } else if (node.kind === "assert") {
            if (this.holds(node.what, text, position)) stack.push(node.next);
          } else {
            list.push({ state: id, start });
          }
        }
      };
      const seeded = current;
      current = [];
      for (const thread of seeded) add(current, thread.state, thread.start);
      add(current, this.start, position);
      for (const thread of current) {
        const node = this.states[thread.state]!;
        if (node.kind === "match") return { index: thread.start, text: text.slice(thread.start, position) };
      }
      if (position >= text.length) return undefined;
      for (const thread of current) {
        const node = this.states[thread.state]!;
        if (node.kind === "char" && node.test.test(char)) next.push({ state: node.next, start: thread.start });
      }
      position += char.length;
      step += 1;
      current = next;
    }
  }

  test(text: string): boolean {
    return this.exec(text) !== undefined;
  }

  /** The NFA's size: a match costs at most this many steps per character of text. */
  get stateCount(): number {
    return this.states.length;
  }

  private charAt(text: string, position: number): string {
    if (!this.unicode) return text[position]!;
    const code = text.codePointAt(position)!;
    return String.fromCodePoint(code);
  }

  private holds(what: "^" | "$" | "b" | "B", text: string, position: number): boolean {
    if (what === "^") return position === 0 || (this.multiline && isLineBreak(text[position - 1]!));
    if (what === "$") return position === text.length || (this.multiline && isLineBreak(text[position]!));
    const boundary = isWordChar(text[position - 1]) !== isWordChar(text[position]);
    return what === "b" ? boundary : !boundary;
  }
}

interface Thread {
  state: number;
  start: number;
}

type State =
  | { kind: "char"; test: RegExp; next: number }
  | { kind: "split"; a: number; b: number }
  | { kind: "assert"; what: "^" | "$" | "b" | "B"; next: number }
  | { kind: "match" };

function isLineBreak(char: string): boolean {
  return char === "\n" || char === "\r" || char === "\u2028" || char === "\u2029";
}

function isWordChar(char: string | undefined): boolean {
  return char !== undefined && /\w/.test(char);
}

class Parser {
  private position = 0;

  constructor(
    private readonly source: string,
    private readonly flags: string,
  ) {}

  parse(): Node {
    const node = this.alternation();
    if (this.position < this.source.length) throw new LinearRegexError(`unmatched ")" at offset ${this.position}`);
    return node;
  }

  private alternation(): Node {
    const options = [this.sequence()];
    while (this.source[this.position] === "|") {
      this.position += 1;
      options.push(this.sequence());
    }
    return options.length === 1 ? options[0]! : { kind: "alt", options };
  }

  private sequence(): Node {
    const items: Node[] = [];
    while (this.position < this.source.length && this.source[this.position] !== "|" && this.source[this.position] !== ")") {
      const atom = this.atom();
      items.push(this.quantified(atom));
    }
    return { kind: "seq", items };
  }

  private quantified(atom: Node): Node {
    const bounds = this.quantifier();
    if (!bounds) return atom;
    if (atom.kind === "assert") throw new LinearRegexError("a repeated assertion");
    if (this.source[this.position] === "?") this.position += 1;
    if (this.source[this.position] !== undefined && "*+?".includes(this.source[this.position]!)) throw new LinearRegexError("a repeat of a repeat");
    return { kind: "repeat", node: atom, min: bounds[0], max: bounds[1] };
  }

  private quantifier(): [number, number] | undefined {
    const c = this.source[this.position];
    if (c === "*" || c === "+" || c === "?") {
      this.position += 1;
      return c === "*" ? [0, Infinity] : c === "+" ? [1, Infinity] : [0, 1];
    }
    if (c === "{") {
      const braced = /^\{(\d+)(,(\d*))?\}/.exec(this.source.slice(this.position, this.position + 24));
      if (!braced) return undefined;
      this.position += braced[0].length;
      const min = Number(braced[1]);
      const max = braced[2] === undefined ? min : braced[3] === "" ? Infinity : Number(braced[3]);
      if (min > 100 || (max !== Infinity && max > 100)) throw new LinearRegexError(`a repeat count over 100 (${braced[0]})`);
      return [min, max];
    }
    return undefined;
  }

  private atom(): Node {
    const c = this.source[this.position]!;
    if (c === "(") return this.group();
    if (c === "^" || c === "$") {
      this.position += 1;
      return { kind: "assert", what: c };
    }
    if (c === "[") return { kind: "char", source: this.characterClass() };
    if (c === "\\") return this.escape();
    const length = this.unicodeLength();
    this.position += length;
    return { kind: "char", source: this.source.slice(this.position - length, this.position) };
  }

  /** Length of the literal at the position: a surrogate pair is one character under the `u` flag. */
  private unicodeLength(): number {
    if (!this.flags.includes("u")) return 1;
    const code = this.source.charCodeAt(this.position);
    return code >= 0xd800 && code <= 0xdbff && this.position + 1 < this.source.length ? 2 : 1;
  }

  private group(): Node {
    const rest = this.source.slice(this.position, this.position + 4);
    if (/^\(\?<?[=!]/.test(rest)) throw new LinearRegexError("a lookahead or lookbehind");
    if (rest.startsWith("(?:")) this.position += 3;
    else if (rest.startsWith("(?<")) {
      const close = this.source.indexOf(">", this.position);
      if (close === -1) throw new LinearRegexError("an unterminated group name");
      this.position = close + 1;
    } else if (rest.startsWith("(?")) throw new LinearRegexError(`the group syntax "${rest.slice(0, 3)}"`);
    else this.position += 1;
    const inner = this.alternation();
    if (this.source[this.position] !== ")") throw new LinearRegexError("an unterminated group");
    this.position += 1;
    return inner;
  }

  private characterClass(): string {
    const start = this.position;
    let i = this.position + 1;
    if (this.source[i] === "^") i += 1;
    if (this.source[i] === "]" && !this.flags.includes("u")) i += 1;
    while (i < this.source.length && this.source[i] !== "]") i += this.source[i] === "\\" ? 2 : 1;
    if (i >= this.source.length) throw new LinearRegexError("an unterminated character class");
    this.position = i + 1;
    return this.source.slice(start, this.position);
  }

  private escape(): Node {
    const start = this.position;
    const next = this.source[this.position + 1];
    if (next === undefined) throw new LinearRegexError("a trailing backslash");
    if (next === "b" || next === "B") {
      this.position += 2;
      return { kind: "assert", what: next };
    }
    if (/[1-9]/.test(next) || next === "k") throw new LinearRegexError("a backreference");
    const tail = this.source.slice(this.position + 1, this.position + 64);
    const long = /^(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|u\{[0-9a-fA-F]+\}|c[A-Za-z]|[pP]\{[^}]*\})/.exec(tail);
    this.position += 1 + (long ? long[0].length : 1);
    return { kind: "char", source: this.source.slice(start, this.position) };
  }
}

/** Refuses the shapes that backtrack exponentially, so a rule's meaning never depends on the engine. */
function refuseExponentialShapes(node: Node, insideRepeat = false): void {
  if (node.kind === "repeat") {
    const repeats = node.max > 1;
    if (repeats && insideRepeat) throw new LinearRegexError("a repeated group that holds a repeat, such as (a+)+");
    refuseExponentialShapes(node.node, insideRepeat || repeats);
  } else if (node.kind === "alt") {
    if (insideRepeat) throw new LinearRegexError("a repeated group that holds an alternation, such as (a|a)*");
    for (const option of node.options) refuseExponentialShapes(option, insideRepeat);
  } else if (node.kind === "seq") {
    for (const item of node.items) refuseExponentialShapes(item, insideRepeat);
  }
}

class Builder {
  readonly states: State[] = [{ kind: "match" }];
  private readonly testers = new Map<string, RegExp>();
  private readonly charFlags: string;

  constructor(flags: string) {
    this.charFlags = flags.replace(/[gmy]/g, "");
  }

  /** Compiles `tree` so it continues at the match state; returns the entry state. */
  build(tree: Node): number {
    return this.compile(tree, 0);
  }

  private add(state: State): number {
    if (this.states.length >= maxLinearStates) throw new LinearRegexError(`more than ${maxLinearStates} states once its repeats are expanded`);
    this.states.push(state);
    return this.states.length - 1;
  }

  /** Builds `node` back to front: `next` is where it continues, the return value its entry. */
  private compile(node: Node, next: number): number {
    switch (node.kind) {
      case "char":
        return this.add({ kind: "char", test: this.tester(node.source), next });
      case "assert":
        return this.add({ kind: "assert", what: node.what, next });
      case "seq": {
        let entry = next;
        for (let i = node.items.length - 1; i >= 0; i -= 1) entry = this.compile(node.items[i]!, entry);
        return entry;
      }
      case "alt": {
        const entries = node.options.map((option) => this.compile(option, next));
        let entry = entries[entries.length - 1]!;
        for (let i = entries.length - 2; i >= 0; i -= 1) entry = this.add({ kind: "split", a: entries[i]!, b: entry });
        return entry;
      }
      case "repeat": {
        let entry = next;
        if (node.max === Infinity) {
          // A loop: a split that either enters the body (which returns to the split) or leaves.
          const split = this.add({ kind: "split", a: -1, b: next });
          const body = this.compile(node.node, split);
          (this.states[split] as { a: number }).a = body;
          entry = split;
        } else {
          // Each optional copy either runs and leads to the next one, or skips to the end.
          for (let i = node.max; i > node.min; i -= 1) entry = this.add({ kind: "split", a: this.compile(node.node, entry), b: next });
        }
        for (let i = 0; i < node.min; i += 1) entry = this.compile(node.node, entry);
        return entry;
      }
    }
  }

  private tester(source: string): RegExp {
    let tester = this.testers.get(source);
    if (!tester) {
      tester = new RegExp(`^(?:${source})$`, this.charFlags);
      this.testers.set(source, tester);
    }
    return tester;
  }
}
