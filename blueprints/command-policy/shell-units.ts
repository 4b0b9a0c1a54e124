import { posix } from "node:path";
import { anyMark, downloadedMark, markWord } from "./protected-paths.ts";

/**
 * One logical command line cut into the units the default policy rules are matched
 * against, in one linear scan: every simple command (split at ; & && || | |& ( ) { } and
 * newlines, inside $(...), `...` and <(...) too), once as written and once per wrapper
 * peeled off (sudo, env, nohup, xargs, busybox, timeout...), the payload of `sh -c`,
 * `bash -c`, `eval` and `su -c` parsed again as a line of its own, and one unit per pipe
 * join (`upstream | downstream`, and the pipeline's first command | each later one).
 *
 * A unit's text is its words joined by single spaces, quotes removed, braces expanded,
 * `${HOME}` read as `$HOME`, absolute paths normalized, paths relative to a known `cd`
 * resolved, and the command word reduced to its base name (`/bin/rm` reads as `rm`).
 * A substitution reads as `$(name)` / `<(name)` once per command inside (`$(echo)$(base64)`).
 * Words carry the marks of protected-paths.ts: a protected path, a credentials path, and a
 * file the command downloaded earlier where a shell runs it.
 *
 * Why not regular expressions over the raw line: a shared "command position" prefix that
 * allows wrappers in any number backtracks exponentially on `sh -c sh -c ...`. Here each
 * character is read once per nesting level, and the levels, the units and their total size
 * are bounded; past a bound the line is reported as too complex rather than checked.
 */
export interface ShellUnits {
  texts: string[];
  /** Why the line could not be fully cut into units, when a bound was hit. */
  tooComplex?: string;
}

/** What one check of a whole command carries from line to line. */
export interface ShellState {
  /** Base names of files a download command wrote to. */
  downloaded: Set<string>;
  /** The working directory a `cd` set, when it is known. */
  cwd?: string;
  /** What an `echo` or `printf` wrote into a file (`echo '...' > x.sh`), by base name, until a shell runs it. */
  written?: Map<string, string>;
}

export const unitLimits = {
  /** `sh -c "sh -c '...'"` and substitutions deeper than this are not unwrapped further. */
  maxDepth: 6,
  /** Wrappers peeled off one command (`sudo nohup env timeout 5 ...`). */
  maxWrappers: 12,
  /** Words one brace expansion may produce. */
  maxBraceWords: 64,
  /** Units one logical line may produce. */
  maxUnits: 512,
  /** Characters of unit text one logical line may produce, as a multiple of its length. */
  budgetFactor: 24,
  budgetFloor: 4096,
};

interface Word {
  text: string;
  /** An unquoted `{` was part of it, so brace expansion applies. */
  braces: boolean;
}

interface SimpleCommand {
  words: string[];
  /** The operator before it: "|" joins it to the previous command's pipeline. */
  joinedByPipe: boolean;
}

class TooComplex extends Error {}

interface Context {
  state: ShellState;
  texts: string[];
  budget: number;
}

const shells = new Set(["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "$SHELL"]);
const keywords = new Set(["if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "coproc"]);

/** Wrappers whose options that take a value are known; any other option is a lone flag. */
const wrappers: Record<string, { valueOptions?: string[]; positional?: number }> = {
  sudo: { valueOptions: ["-u", "-g", "-C", "-h", "-p", "-r", "-t", "-U", "-D", "-R", "-T", "--user", "--group", "--chdir", "--prompt"] },
  doas: { valueOptions: ["-u", "-C"] },
  pkexec: { valueOptions: ["--user"] },
  nohup: {},
  exec: { valueOptions: ["-a"] },
  command: {},
  builtin: {},
  time: { valueOptions: ["-f", "-o", "--format", "--output"] },
  nice: { valueOptions: ["-n"] },
  ionice: { valueOptions: ["-c", "-n", "-p"] },
  stdbuf: { valueOptions: ["-i", "-o", "-e"] },
  setsid: {},
  unbuffer: {},
  chroot: { positional: 1 },
  xargs: { valueOptions: ["-I", "-i", "-n", "-P", "-d", "-L", "-l", "-a", "-E", "-e", "-s", "--max-args", "--max-procs", "--delimiter", "--arg-file"] },
  env: { valueOptions: ["-u", "-C", "-S", "--unset", "--chdir"] },
  timeout: { valueOptions: ["-s", "-k", "--signal", "--kill-after"], positional: 1 },
  busybox: {},
  watch: { valueOptions: ["-n", "-d", "--interval"] },
  flock: { valueOptions: ["-w", "-E", "--timeout"], positional: 1 },
  taskset: { valueOptions: [], positional: 1 },
  numactl: { valueOptions: ["-N", "-m", "-C", "-p", "-i"] },
  caffeinate: {},
  chrt: { positional: 1 },
  runuser: { valueOptions: ["-u", "-g", "-l"] },
  strace: { valueOptions: ["-o", "-e", "-p", "-s"] },
  // Launchers run their command on the allocated nodes: it is judged as if run here.
  srun: { valueOptions: ["-N", "-n", "-p", "-c", "-t", "-J", "-A", "-w", "-G", "-o", "-e", "--gres", "--partition", "--nodes", "--ntasks"] },
  mpirun: { valueOptions: ["-np", "-n", "-N", "-H", "--host", "-hostfile", "--hostfile", "-x", "--map-by", "--bind-to"] },
  mpiexec: { valueOptions: ["-np", "-n", "-N", "-H", "--host", "-hostfile", "--hostfile", "-x", "--map-by", "--bind-to"] },
  ltrace: { valueOptions: ["-o", "-e", "-p"] },
};

export function lineUnits(line: string, state: ShellState): ShellUnits {
  const context: Context = { state, texts: [], budget: Math.max(unitLimits.budgetFloor, line.length * unitLimits.budgetFactor) };
  try {
    parseList(line.replace(anyMark, ""), 0, context);
  } catch (error) {
    if (error instanceof TooComplex) return { texts: context.texts, tooComplex: error.message };
    throw error;
  }
  return { texts: context.texts };
}

function emit(context: Context, text: string): void {
  context.budget -= text.length + 1;
  if (context.budget < 0 || context.texts.length >= unitLimits.maxUnits) throw new TooComplex("it expands into more commands than a check reads");
  context.texts.push(text);
}

/**
 * Scans `source` from `start` as a list of commands until `close` (a `)` or backtick at
 * this nesting) or the end. Returns the index just past what it read and the base names of
 * the commands it found (a substitution is shown by them).
 */
function parseList(source: string, depth: number, context: Context, start = 0, close?: string): { end: number; names: string[] } {
  if (depth > unitLimits.maxDepth) throw new TooComplex(`it nests shells or substitutions more than ${unitLimits.maxDepth} deep`);
  const scan: ListScan = { source, depth, context, commands: [], names: [], words: [], word: undefined, joinedByPipe: false };
  let i = start;
  while (i < source.length) {
    const c = source[i]!;
    if (close !== undefined && c === close) {
      i += 1;
      break;
    }
    if (c === "\\") {
      if (i + 1 < source.length && source[i + 1] !== "\n") append(scan, source[i + 1]!);
      i += 2;
      continue;
    }
    if (c === "'") {
      const endQuote = source.indexOf("'", i + 1);
      const stop = endQuote === -1 ? source.length : endQuote;
      append(scan, source.slice(i + 1, stop));
      if (scan.word === undefined) append(scan, "");
      i = stop + 1;
      continue;
    }
    if (c === '"') {
      i = scanDoubleQuoted(scan, i + 1);
      continue;
    }
    if (c === "$" && source[i + 1] === "(") {
      i = substitution(scan, i + 2, "$(", ")");
      continue;
    }
    if (c === "`") {
      i = substitution(scan, i + 1, "$(", "`");
      continue;
    }
    if (c === "$" && source[i + 1] === "{") {
      i = parameter(source, i, (text) => append(scan, text));
      continue;
    }
    if ((c === "<" || c === ">") && source[i + 1] === "(") {
      flushWord(scan);
      i = substitution(scan, i + 2, `${c}(`, ")");
      continue;
    }
    if (c === " " || c === "\t" || c === "\r") {
      flushWord(scan);
      i += 1;
      continue;
    }
    if (c === "#" && scan.word === undefined) {
      const newline = source.indexOf("\n", i);
      if (newline === -1) break;
      i = newline;
      continue;
    }
    if (c === ";" || c === "\n" || c === "&" || c === "|" || c === "(" || c === ")") {
      i = scanSeparator(scan, i, c);
      continue;
    }
    if (c === ">" || c === "<") {
      i = scanRedirect(scan, i, c);
      continue;
    }
    append(scan, c, c === "{");
    i += 1;
  }
  flushCommand(scan, false);
  emitCommands(scan.commands, depth, context, scan.names);
  return { end: i, names: scan.names };
}

/** Where `parseList` stands in its list: the commands read so far and the word being read. */
interface ListScan {
  source: string;
  depth: number;
  context: Context;
  commands: SimpleCommand[];
  /** Base names of the commands found: a subshell's as it is read, this list's own at the end (`emitCommands`). */
  names: string[];
  words: Word[];
  word: Word | undefined;
  /** Whether the command being read follows a `|`. */
  joinedByPipe: boolean;
}

function flushWord(scan: ListScan): void {
  if (scan.word) scan.words.push(scan.word);
  scan.word = undefined;
}

function flushCommand(scan: ListScan, nextJoinedByPipe: boolean): void {
  flushWord(scan);
  if (scan.words.length > 0) scan.commands.push({ words: expandWords(scan.words, scan.context), joinedByPipe: scan.joinedByPipe });
  scan.words = [];
  scan.joinedByPipe = nextJoinedByPipe;
}

function append(scan: ListScan, text: string, braces = false): void {
  scan.word ??= { text: "", braces: false };
  scan.word.text += text;
  if (braces) scan.word.braces = true;
}

/** Reads a nested list from `at` to `closer`; returns the index just past it. */
function substitution(scan: ListScan, at: number, opener: string, closer: string): number {
  const inner = parseList(scan.source, scan.depth + 1, scan.context, at, closer);
  // One `$(name)` per command inside, so a rule finds a name without scanning a list.
  append(scan, inner.names.map((name) => `${opener}${name})`).join("") || `${opener})`);
  return inner.end;
}

/** A double-quoted string from `at` (just past the opening quote); returns the index just past its closing quote. */
function scanDoubleQuoted(scan: ListScan, at: number): number {
  const source = scan.source;
  let i = at;
  append(scan, "");
  while (i < source.length && source[i] !== '"') {
    const d = source[i]!;
    if (d === "\\" && i + 1 < source.length && '$`"\\\n'.includes(source[i + 1]!)) {
      append(scan, source[i + 1]!);
      i += 2;
    } else if (d === "$" && source[i + 1] === "(") {
      i = substitution(scan, i + 2, "$(", ")");
    } else if (d === "`") {
      i = substitution(scan, i + 1, "$(", "`");
    } else if (d === "$" && source[i + 1] === "{") {
      i = parameter(source, i, (text) => append(scan, text));
    } else {
      append(scan, d);
      i += 1;
    }
  }
  return i + 1;
}

/** `;` newline `&` `|` `(` `)` at `at` (or a redirect that starts with `&`); returns the index past it. */
function scanSeparator(scan: ListScan, at: number, c: string): number {
  const source = scan.source;
  if (c === "&" && source[at + 1] === ">") {
    // `&>file` / `&>>file` redirect both streams.
    flushWord(scan);
    const length = source[at + 2] === ">" ? 3 : 2;
    scan.words.push({ text: source.slice(at, at + length), braces: false });
    return at + length;
  }
  if (c === "&" && scan.word !== undefined && /[<>]$/.test(scan.word.text)) {
    // `2>&1`, `>&2`: part of a redirect, not a separator.
    append(scan, "&");
    return at + 1;
  }
  const pipe = c === "|" && source[at + 1] !== "|";
  flushCommand(scan, pipe);
  if (c === "(") {
    const inner = parseList(source, scan.depth + 1, scan.context, at + 1, ")");
    scan.names.push(...inner.names);
    return inner.end;
  }
  return at + ((c === "|" || c === "&") && (source[at + 1] === c || (c === "|" && source[at + 1] === "&")) ? 2 : 1);
}

/** A redirect operator at `at`, a word of its own (`> /etc/hosts`) with its fd (`2>`); returns the index past it. */
function scanRedirect(scan: ListScan, at: number, c: string): number {
  const source = scan.source;
  const fd = scan.word !== undefined && /^\d+$/.test(scan.word.text) ? scan.word.text : "";
  if (fd !== "") scan.word = undefined;
  else flushWord(scan);
  let op = c;
  let j = at + 1;
  while (j < source.length && (source[j] === ">" || source[j] === "<" || (source[j] === "|" && op === ">")) && op.length < 3) {
    op += source[j]!;
    j += 1;
  }
  if (source[j] === "&") {
    op += "&";
    j += 1;
    while (j < source.length && /[\d-]/.test(source[j]!)) op += source[j++]!;
  }
  scan.words.push({ text: `${fd}${op}`, braces: false });
  return j;
}

/** `${HOME}`, `${HOME:?msg}`, `${HOME:-x}` read as `$HOME`; other `${...}` are kept as written. */
function parameter(source: string, at: number, appendText: (text: string) => void): number {
  const closing = source.indexOf("}", at + 2);
  const end = closing === -1 ? source.length : closing + 1;
  const inside = source.slice(at + 2, closing === -1 ? source.length : closing);
  const name = /^[A-Za-z_]\w*/.exec(inside)?.[0];
  appendText(name !== undefined && (name === inside || /^:?[-?=+]/.test(inside.slice(name.length))) ? `$${name}` : source.slice(at, end));
  return end;
}

function expandWords(words: Word[], context: Context): string[] {
  const result: string[] = [];
  for (const word of words) {
    const expanded = word.braces ? expandBraces(word.text) : [word.text];
    for (const text of expanded) result.push(normalizeWord(text));
    if (result.length > context.budget) throw new TooComplex("its brace expansions produce more words than a check reads");
  }
  return result;
}

/** Comma lists in braces (`{/etc,/usr}`, `/{bin,sbin}`), as a shell expands them; ranges are left alone. */
export function expandBraces(text: string): string[] {
  let words = [text];
  for (let round = 0; round < 8; round += 1) {
    const next: string[] = [];
    let changed = false;
    for (const current of words) {
      const open = findBraceList(current);
      if (!open) {
        next.push(current);
        continue;
      }
      changed = true;
      const [start, end, parts] = open;
      for (const part of parts) next.push(current.slice(0, start) + part + current.slice(end + 1));
      if (next.length > unitLimits.maxBraceWords) throw new TooComplex(`a brace expansion gives more than ${unitLimits.maxBraceWords} words`);
    }
    words = next;
    if (!changed) return words;
  }
  return words;
}

/** The innermost `{a,b}` of a word: its bounds and parts, when it has one. */
function findBraceList(text: string): [number, number, string[]] | undefined {
  let open = -1;
  for (let i = 0; i < text.length; i += 1) {
    if (text[i] === "{") open = i;
    else if (text[i] === "}" && open !== -1) {
      const inside = text.slice(open + 1, i);
      if (inside.includes(",")) return [open, i, inside.split(",")];
      open = -1;
    }
  }
  return undefined;
}

/** `//` and `..` in absolute paths resolved (`/tmp/../` is `/`), so spellings of one path read alike. */
function normalizeWord(text: string): string {
  if (!text.startsWith("/") || text.length === 1) return text;
  const trailing = text.endsWith("/") ? "/" : "";
  const resolved = posix.normalize(text);
  return resolved === "/" ? "/" : `${resolved.replace(/\/$/, "")}${trailing}`;
}

function baseName(word: string): string {
  const slash = word.lastIndexOf("/");
  return slash === -1 || slash === word.length - 1 ? word : word.slice(slash + 1);
}

/** The text an `echo` or `printf` of a pipeline writes, read as a program at most once. */
interface Echoed {
  text: string;
  read: boolean;
}

function emitCommands(commands: SimpleCommand[], depth: number, context: Context, names: string[]): void {
  let pipelineFirst: string | undefined;
  let previous: string | undefined;
  let echoedFirst: Echoed | undefined;
  let echoedPrevious: Echoed | undefined;
  for (const command of commands) {
    const { levels, raw } = peel(command.words, depth, context);
    const innermost = levels[levels.length - 1]!;
    names.push(innermost[0] ? baseName(innermost[0]).replace(/[^\w.+$-]/g, "") : "");
    const texts = levels.map((level) => level.join(" "));
    for (const text of texts) emit(context, text);
    if (command.joinedByPipe && previous !== undefined) {
      for (const text of texts) {
        emit(context, `${previous} | ${text}`);
        if (pipelineFirst !== undefined && pipelineFirst !== previous) emit(context, `${pipelineFirst} | ${text}`);
      }
      // `echo 'rm -rf /' | bash`: the shell runs the echoed text, so it is read as a line.
      if (readsProgramFromStdin(raw)) {
        for (const echoed of [echoedPrevious, echoedFirst]) {
          if (echoed === undefined || echoed.read) continue;
          echoed.read = true;
          parseList(echoed.text, depth + 1, context);
        }
      }
    } else {
      pipelineFirst = undefined;
      echoedFirst = undefined;
    }
    const flat = texts[texts.length - 1]!.replace(/\|/g, "¦");
    pipelineFirst ??= flat;
    previous = flat;
    const echoedText = echoedTextOf(raw);
    echoedPrevious = echoedText === undefined ? undefined : { text: echoedText, read: false };
    echoedFirst ??= echoedPrevious;
    trackState(innermost, context.state);
    runWrittenScript(raw, depth, context);
  }
}

/**
 * The command as written, then without each wrapper and leading assignment in turn, with
 * its words made canonical. A shell's `-c` payload, `eval`'s words and `su -c`'s command
 * are parsed as lines of their own (their units are emitted there). `raw`: the innermost
 * command's words as written (not resolved against a `cd`, no marks).
 */
function peel(words: string[], depth: number, context: Context): { levels: string[][]; raw: string[] } {
  const levels: string[][] = [];
  let rest = words;
  for (let round = 0; round <= unitLimits.maxWrappers; round += 1) {
    let skip = 0;
    while (skip < rest.length && (keywords.has(rest[skip]!) || /^[A-Za-z_]\w*\+?=/.test(rest[skip]!))) skip += 1;
    if (skip > 0) {
      rest = rest.slice(skip);
      continue;
    }
    if (rest.length === 0) return { levels: levels.length > 0 ? levels : [[]], raw: rest };
    const canonical = canonicalWords(rest, context.state);
    levels.push(canonical);
    const name = canonical[0]!;
    const payload = payloadOf(name, rest);
    if (payload !== undefined) {
      parseList(payload, depth + 1, context);
      return { levels, raw: rest };
    }
    const wrapper = wrappers[name];
    if (!wrapper) return { levels, raw: rest };
    rest = afterWrapperOptions(rest, wrapper);
  }
  throw new TooComplex(`it wraps one command in more than ${unitLimits.maxWrappers} wrappers`);
}

function afterWrapperOptions(words: string[], wrapper: { valueOptions?: string[]; positional?: number }): string[] {
  let i = 1;
  while (i < words.length && words[i]!.startsWith("-") && words[i] !== "-") {
    const option = words[i]!;
    i += 1;
    if (option === "--") break;
    // A value option alone, or last in a cluster of short flags (`sudo -iu root`).
    const values = wrapper.valueOptions ?? [];
    if (values.includes(option) || (/^-[a-zA-Z]{2,}$/.test(option) && values.includes(`-${option[option.length - 1]}`))) i += 1;
  }
  // `env` also takes assignments before the command; they are skipped as any assignment is.
  return words.slice(Math.min(words.length, i + (wrapper.positional ?? 0)));
}

/**
 * The text a command runs as shell code: `sh -c X`, `bash -lc X`, `eval X...`, `su -c X`,
 * a shell's here-string (`bash <<< X`), `env -S X`.
 */
function payloadOf(name: string, words: string[]): string | undefined {
  if (name === "eval") return words.slice(1).join(" ");
  if (name === "env") {
    const split = words.findIndex((word) => word === "-S" || word === "--split-string");
    return split === -1 ? undefined : (words[split + 1] ?? "");
  }
  if (shells.has(name) || name === "su" || name === "runuser") {
    for (let i = 1; i < words.length; i += 1) {
      const word = words[i]!;
      // A cluster of short flags with a c in it (`-lc`, `-ec`); tested in two single passes.
      if (word === "-c" || word === "--command" || (/^-[a-zA-Z]+$/.test(word) && word.includes("c"))) return words[i + 1] ?? "";
      if (shells.has(name) && /^0?<<<$/.test(word)) return words[i + 1] ?? "";
      if (!word.startsWith("-") && !(name === "su" || name === "runuser")) return undefined;
    }
  }
  return undefined;
}

/**
 * `echo '...' > x.sh` keeps the text for x.sh; a later `bash x.sh`, `. ./x.sh` or `./x.sh`
 * reads it as a line, once.
 */
function runWrittenScript(words: string[], depth: number, context: Context): void {
  if (words.length === 0) return;
  const name = baseName(words[0]!);
  const redirect = words.findIndex((word) => /^\d?>>?$/.test(word));
  if ((name === "echo" || name === "printf") && redirect > 0 && words[redirect + 1] !== undefined) {
    const text = echoedTextOf(words.slice(0, redirect));
    context.state.written ??= new Map();
    const file = baseName(words[redirect + 1]!);
    // `>>` appends: every line echoed into the script is read when it runs.
    const before = words[redirect]!.endsWith(">>") ? context.state.written.get(file) : undefined;
    if (text !== undefined) context.state.written.set(file, before === undefined ? text : `${before}\n${text}`);
    return;
  }
  const written = context.state.written;
  if (written === undefined || written.size === 0) return;
  const operand = shells.has(name) || name === "source" || name === "." ? words.find((word, index) => index > 0 && !word.startsWith("-")) : words[0];
  const script = operand === undefined || !operand.includes(".") ? undefined : written.get(baseName(operand));
  if (script === undefined) return;
  written.delete(baseName(operand!));
  parseList(script, depth + 1, context);
}

/** Whether the command is a shell that reads its program from standard input (`bash`, `sh -s x`, `bash -`, `sh 2>&1`). */
function readsProgramFromStdin(words: string[]): boolean {
  if (words.length === 0 || !shells.has(baseName(words[0]!))) return false;
  for (let i = 1; i < words.length; i += 1) {
    const word = words[i]!;
    if (word === "-s" || word === "-") return true;
    if (/^\d*(?:[<>]+|&>>?)$/.test(word)) i += 1;
    else if (!word.startsWith("-") && !/^\d*[<>]/.test(word)) return false;
  }
  return true;
}

/** What an `echo` or `printf` writes, with `\n` as a line break; undefined for any other command. */
function echoedTextOf(words: string[]): string | undefined {
  const name = words.length === 0 ? undefined : baseName(words[0]!);
  if (name !== "echo" && name !== "printf" && name !== "yes") return undefined;
  let first = 1;
  while (name === "echo" && first < words.length && /^-[neE]+$/.test(words[first]!)) first += 1;
  return words.slice(first).join(" ").replaceAll("\\n", "\n");
}

/**
 * The command word as its base name, `~` and `$HOME` alike, and, after a `cd` to a known
 * folder, path-like relative words (`*`, `.`, `./x`, `a/b*`) resolved against it, so
 * `cd / && rm -rf *` reads as `rm -rf /*`. A shell's script operand, or the command word,
 * that is a file downloaded earlier is marked so; so are protected and credentials paths.
 */
function canonicalWords(words: string[], state: ShellState): string[] {
  const result = words.map((word, index) => {
    let text = word.replace(/^\$\{?HOME\}?(?=\/|$)/, "$HOME");
    if (index > 0 && state.cwd !== undefined && isRelativePathLike(text)) text = normalizeWord(posix.join(state.cwd, text));
    return index > 0 ? markWord(text) : text;
  });
  const first = result[0]!;
  const name = baseName(first);
  if (first.includes("/") && state.downloaded.has(name)) {
    result[0] = `${downloadedMark}${name}`;
    return result;
  }
  result[0] = name;
  if (shells.has(name) || name === "source" || name === ".") {
    const operand = result.findIndex((word, index) => index > 0 && !word.startsWith("-"));
    if (operand > 0 && state.downloaded.has(baseName(result[operand]!))) result[operand] = `${downloadedMark}${baseName(result[operand]!)}`;
  }
  return result;
}

/**
 * An argument a `cd` changes the meaning of: any word that is not an option, absolute,
 * home-relative, a variable, an assignment or a remote (`host:path`, URLs). Plain words
 * count too: after `cd /`, `rm -rf bin` deletes `/bin`.
 */
function isRelativePathLike(word: string): boolean {
  return word !== "" && !/^[-/~$]/.test(word) && !word.includes("=") && !word.includes(":") && !/^\d*[<>&]/.test(word);
}

/** What a command changes for the commands after it: the working directory, downloaded files. */
function trackState(marked: string[], state: ShellState): void {
  const words = marked.map((word) => word.replace(anyMark, ""));
  const name = words[0];
  if (name === "cd" || name === "pushd") {
    const target = words.find((word, index) => index > 0 && !word.startsWith("-"));
    if (target === undefined || target === "~" || target === "$HOME") state.cwd = "~";
    else if (target.startsWith("/")) state.cwd = normalizeWord(target);
    else if (target.startsWith("~/") || target.startsWith("$HOME/")) state.cwd = target;
    else state.cwd = state.cwd === undefined ? undefined : normalizeWord(posix.join(state.cwd, target));
    return;
  }
  for (const file of downloadedFiles(words)) state.downloaded.add(baseName(file));
}

/** Files a `curl`, `wget` or `aria2c` command writes: `-o F`, `-O` (the URL's name), `> F`. */
function downloadedFiles(words: string[]): string[] {
  const name = words[0];
  if (name !== "curl" && name !== "wget" && name !== "aria2c" && name !== "fetch") return [];
  const files: string[] = [];
  const urls = words.filter((word) => /^[a-z][\w+.-]*:\/\//i.test(word));
  const urlName = (url: string) => {
    let path = url.split(/[?#]/, 1)[0]!;
    while (path.endsWith("/")) path = path.slice(0, -1);
    return baseName(path);
  };
  let remoteName = name === "wget";
  for (let i = 1; i < words.length; i += 1) {
    const word = words[i]!;
    const next = words[i + 1];
    if (/^\d*>>?$/.test(word) && next !== undefined) files.push(next);
    if (name === "curl" || name === "aria2c" || name === "fetch") {
      if (word === "-o" || word === "--output" || (/^-[a-zA-Z]+$/.test(word) && word.endsWith("o"))) {
        if (next !== undefined) files.push(next);
      } else if (word.startsWith("--output=")) files.push(word.slice(9));
      else if (/^-o./.test(word)) files.push(word.slice(2));
      else if (word === "--remote-name" || word === "--remote-name-all" || (/^-[a-zA-Z]+$/.test(word) && word.includes("O"))) remoteName = true;
    } else {
      if (word === "-O" || word === "--output-document" || (/^-[a-zA-Z]+$/.test(word) && word.endsWith("O"))) {
        remoteName = false;
        if (next !== undefined && next !== "-") files.push(next);
      } else if (word.startsWith("--output-document=")) {
        remoteName = false;
        if (word.slice(18) !== "-") files.push(word.slice(18));
      } else if (/^-[a-zA-Z]*O./.test(word)) {
        remoteName = false;
        const file = word.slice(word.indexOf("O") + 1);
        if (file !== "-") files.push(file);
      }
    }
  }
  if (remoteName) files.push(...urls.map(urlName));
  return files.filter((file) => file !== "" && file !== "-");
}
