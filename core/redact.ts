import { writeFileAtomic } from "./atomic-file.ts";

/**
 * Removes secrets before text leaves the machine or reaches a file a3r writes (LLM
 * prompts, reports, event logs, status files, the leader's checkpoint). Patterns cover the
 * key formats of common providers plus generic `KEY=value` assignments whose name says
 * secret; known secret values from the environment are replaced too, whatever their shape.
 *
 * Every pattern is linear-time: each repetition is bounded, none is nested in another
 * (core/redact-redos.int.test.ts has recheck prove it), so no input makes a pattern scan
 * more than a fixed window from each position. A rule matches `pre`, `secret` and `post`
 * (named groups; `pre` and `post` are kept); `accept` may turn a match down.
 */
interface SecretRule {
  pattern: RegExp;
  /** A provider key shape (its whole match is the key): used to join keys a log wrapped. */
  shape?: boolean;
  /** Found by the name before the value alone (`*_KEY=`, `--token`): the value may be any word. */
  generic?: boolean;
  accept?: (groups: Record<string, string | undefined>, offset: number, text: string) => boolean;
}

const shapeRules: SecretRule[] = [
  { pattern: /(?<![A-Za-z0-9_-])(?<secret>sk-ant-[A-Za-z0-9_-]{10,256})/g },
  { pattern: /(?<![A-Za-z0-9_-])(?<secret>sk-(?:proj-)?[A-Za-z0-9_-]{16,256})/g },
  // Stripe secret and restricted keys.
  { pattern: /(?<![A-Za-z0-9_-])(?<secret>[sr]k_(?:live|test)_[A-Za-z0-9]{16,256})/g },
  { pattern: /(?<![A-Za-z0-9_-])(?<secret>github_pat_[A-Za-z0-9_]{22,256})/g },
  { pattern: /(?<![A-Za-z0-9_-])(?<secret>gh[pousr]_[A-Za-z0-9]{20,256})/g },
  { pattern: /(?<![A-Za-z0-9_-])(?<secret>hf_[A-Za-z0-9]{20,256})/g },
  { pattern: /(?<![A-Za-z0-9_-])(?<secret>AKIA[0-9A-Z]{16})/g },
  // Google API keys.
  { pattern: /(?<![A-Za-z0-9_-])(?<secret>AIza[0-9A-Za-z_-]{35})/g },
  { pattern: /(?<![A-Za-z0-9_-])(?<secret>xox[abeprs]-[A-Za-z0-9-]{10,256})/g },
  // A JSON Web Token: base64url header and payload (both JSON objects, so `eyJ`), then the signature.
  { pattern: /(?<![A-Za-z0-9_-])(?<secret>eyJ[A-Za-z0-9_-]{8,4096}\.eyJ[A-Za-z0-9_-]{4,8192}\.[A-Za-z0-9_-]{0,4096})/g },
  // Each starts a word: "task-difficulty-hard-seed1" holds no OpenAI key.
].map((rule) => ({ ...rule, shape: true }));

const contextRules: SecretRule[] = [
  { pattern: /(?<secret>-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----[\s\S]{0,16384}?-----END [A-Z ]{0,40}PRIVATE KEY-----)/g },
  // Slack incoming webhooks: the path is the credential.
  { pattern: /(?<pre>hooks\.slack\.com\/(?:services|workflows|triggers)\/)(?<secret>[A-Za-z0-9_/-]{8,256})/g },
  { pattern: /(?<pre>\bBearer\s{1,8})(?<secret>[A-Za-z0-9._~+/=-]{12,4096})/g },
  // HTTP Basic auth: after an Authorization header, or any `Basic` token that decodes to user:password.
  { pattern: /(?<pre>\bBasic\s{1,8})(?<secret>[A-Za-z0-9+/]{8,4096}={0,2})/g, accept: isBasicCredential },
  // `mysql -u root -pPASSWORD`: the password is glued to -p (a bare -p prompts for it).
  {
    pattern:
      /(?<pre>\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlpump|mariadb|mariadb-dump)\b[^\n]{0,256}?\s-p(?<q>["']?))(?<secret>[^\s"']{1,256})(?<post>\k<q>)/g,
  },
  // A wandb API key is 40 hex characters with no prefix: taken after the word wandb (`wandb login KEY`).
  { pattern: /(?<pre>\bwandb\b[^\n]{0,80}?)(?<secret>\b[0-9a-f]{40}\b)/gi },
  // An AWS secret access key carries no prefix: 40 characters of base64 letters. Among such
  // runs only those that look random (upper and lower case and digits, high entropy) are
  // taken, so a git sha (lower-case hex) or a word is left alone.
  { pattern: /(?<![A-Za-z0-9/+=])(?<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])/g, accept: (groups) => looksRandom(groups.secret!) },
  // Credentials inside URLs of any scheme: scheme://user:password@host, the user may be empty
  // (redis://:password@host); a password holds no `/`, `?` or `#` (RFC 3986 userinfo).
  { pattern: /(?<pre>:\/\/[^/\s:@]{0,256}:)(?<secret>[^@\s/?#]{1,256})(?<post>@)/g },
  // A name that ENDS in a secret word (api_key, HF_TOKEN, "wandb_api_key"), so max_tokens,
  // num_tokens and tokenizer keep their values; the name may be quoted (JSON, Python dicts),
  // purely numeric values and references (`$VAR`, `${VAR}`) are left alone.
  {
    pattern:
      /(?<pre>\b(?<name>[A-Za-z0-9_-]{0,64}(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?))\b["']?\s{0,8}[=:]\s{0,8}(?<q>["']?))(?!\d{1,64}\b)(?!\$)(?<secret>[^\s"',}]{4,512})(?<post>\k<q>)/gi,
    generic: true,
  },
  // A name with PASS as a word of its own (DB_PASS, MYSQL_PASSWORD_PROD, PASS), not bypass or passed.
  {
    pattern:
      /(?<pre>\b(?<name>[A-Za-z0-9_-]{0,64}PASS[A-Za-z0-9_-]{0,32})\b["']?\s{0,8}[=:]\s{0,8}(?<q>["']?))(?!\d{1,64}\b)(?!\$)(?<secret>[^\s"',}]{4,512})(?<post>\k<q>)/gi,
    accept: (groups) => /(?:^|[_-])PASS(?:WORD|WD|PHRASE)?(?:$|[_-])/i.test(groups.name!),
    generic: true,
  },
  // Command-line flags: --api-key VALUE, --hf-token=VALUE, --db-pass VALUE.
  {
    pattern:
      /(?<pre>(?<name>--?[A-Za-z0-9-]{0,64}(?:key|token|secret|password|passwd|-pass))(?:\s{1,8}|=)(?<q>["']?))(?!-)(?!\$)(?<secret>[^\s"']{4,512})(?<post>\k<q>)/gi,
    generic: true,
  },
];

const secretRules: SecretRule[] = [...shapeRules, ...contextRules];

// Where a log wraps a key over two lines: the end of one line and the start of the next.
const lineTail = /\S{1,256}$/;
const lineHead = /^\S{1,256}/;
const keyPrefixes = ["sk-", "sk_", "rk_", "github_pat_", "gh", "hf_", "AKIA", "AIza", "xox", "eyJ"];

export const REDACTED = "[REDACTED]";

/** The patterns, for the ReDoS check (core/redact-redos.int.test.ts). */
export const secretPatternSources: readonly string[] = secretRules.map((rule) => rule.pattern.source);

export function secretValuesFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.entries(env)
    .filter(([name, value]) => value && value.length >= 8 && /KEY|TOKEN|SECRET|PASSWORD|PASSWD|(?:^|_)PASS(?:$|_)/i.test(name))
    .map(([, value]) => value as string);
}

/** What a secret found at `offset` of `text` is replaced with. */
type Marker = (secret: string, offset: number, text: string) => string;

export function redactSecrets(text: string, knownSecrets: string[] = secretValuesFromEnv()): string {
  const secrets = sortedSecrets(knownSecrets);
  return replaceSecrets(joinSplitSecrets(text, secrets), secrets, () => REDACTED);
}

/**
 * Every string in a JSON-like value redacted (object keys too), for records written as
 * JSON (events, status.json): redacting the serialized text could cut into its syntax.
 */
export function redactValue<T>(value: T, knownSecrets: string[] = secretValuesFromEnv()): T {
  const secrets = sortedSecrets(knownSecrets);
  const walk = (item: unknown): unknown => {
    if (typeof item === "string") return redactSecrets(item, secrets);
    if (Array.isArray(item)) return item.map(walk);
    if (item !== null && typeof item === "object" && Object.getPrototypeOf(item) === Object.prototype) {
      return Object.fromEntries(Object.entries(item).map(([key, inner]) => [redactSecrets(key, secrets), walk(inner)]));
    }
    return item;
  };
  return walk(value) as T;
}

/** Longest first, so a secret that contains a shorter one is removed whole. */
function sortedSecrets(knownSecrets: readonly string[]): string[] {
  return [...new Set(knownSecrets)].filter((secret) => secret.length >= 8).sort((a, b) => b.length - a.length);
}

function replaceSecrets(
  text: string,
  secrets: readonly string[],
  mark: Marker,
  take: (rule: SecretRule, groups: Record<string, string | undefined>) => boolean = () => true,
): string {
  let result = text;
  for (const secret of secrets) result = result.replaceAll(secret, (match, offset: number, whole: string) => mark(match, offset, whole));
  for (const rule of secretRules) {
    result = result.replace(rule.pattern, (match: string, ...rest: unknown[]) => {
      const groups = rest.at(-1) as Record<string, string | undefined>;
      const offset = rest.at(-3) as number;
      const whole = rest.at(-2) as string;
      // A reference (`$VAR`, `"${A3R_SECRET_KEY}"`) names a secret without holding it.
      if (/^["']{0,2}\$\{?[A-Za-z_]/.test(groups.secret!) || (rule.accept && !rule.accept(groups, offset, whole)) || !take(rule, groups)) return match;
      const pre = groups.pre ?? "";
      return `${pre}${mark(groups.secret!, offset + pre.length, whole)}${groups.post ?? ""}`;
    });
  }
  return result;
}

/**
 * A command's literal secrets, lifted into environment variables: each value becomes a
 * reference (`"${A3R_SECRET_API_KEY}"`, quoted for where it stands, so the shell passes it
 * as the same one word) and is returned with its name, for the process that runs the
 * command to receive in its environment. A command with nothing secret comes back as it is.
 * Names come from the flag or variable before the value, else a number; `taken` are names
 * already given (by an earlier command of the same topic), reused for the same value.
 */
export function liftCommandSecrets(
  command: string,
  knownSecrets: string[] = secretValuesFromEnv(),
  taken: Record<string, string> = {},
): { command: string; secrets: Record<string, string> } {
  const secrets: Record<string, string> = { ...taken };
  const lifted = replaceSecrets(
    command,
    sortedSecrets(knownSecrets),
    (value, offset, text) => {
      const name = secretName(value, text.slice(Math.max(0, offset - 80), offset), secrets);
      secrets[name] = value;
      return reference(name, quoteStateAt(text, offset));
    },
    (rule, groups) => !rule.generic || isCredential(groups.name!, groups.secret!),
  );
  return { command: lifted, secrets };
}

/**
 * Whether a value found by its name alone is a credential to lift out of a command: the
 * name says so (token, secret, password, api, auth, access, private), or the value is not a
 * plain word, and it is no path. So `data.prompt_key=prompt`, `reward_fn_key=data_source`
 * or `--ssh-key ~/.ssh/id_ed25519` stay as written (settings and paths), while
 * `--api-key anything` or `sort_key=x9Fq2...` are lifted.
 */
function isCredential(name: string, value: string): boolean {
  // A path names where a credential is (GOOGLE_APPLICATION_CREDENTIALS=/etc/key.json), not the credential.
  if (/^(?:\/|~\/|\.\.?\/)/.test(value)) return false;
  return /TOKEN|SECRET|PASS|API|AUTH|ACCESS|PRIVATE|CREDENTIAL/i.test(name) || !/^[A-Za-z_.-]{1,512}$/.test(value);
}

export const secretReferencePattern = /\$\{(A3R_SECRET_[A-Z0-9_]{1,64})\}/g;

function secretName(value: string, before: string, given: Record<string, string>): string {
  const existing = Object.entries(given).find(([, known]) => known === value)?.[0];
  if (existing !== undefined) return existing;
  const label = /(?:--?([A-Za-z][A-Za-z0-9-]{0,40})(?:\s{1,8}|=)|\b([A-Za-z_][A-Za-z0-9_]{0,40})\s{0,8}[=:]\s{0,8})["']?$/.exec(before);
  const word = (label?.[1] ?? label?.[2] ?? "")
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, "_")
    .replace(/^_|_$/g, "");
  const base = word === "" ? "A3R_SECRET" : `A3R_SECRET_${word.replace(/^A3R_SECRET_?/, "")}`.replace(/_$/, "");
  for (let index = word === "" ? 1 : 0; ; index++) {
    const name = index === 0 ? base : `${base}_${index}`;
    if (given[name] === undefined) return name;
  }
}

type QuoteState = "none" | "single" | "double";

/** Whether `offset` of a shell command is inside single quotes, double quotes or neither. */
function quoteStateAt(command: string, offset: number): QuoteState {
  let state: QuoteState = "none";
  for (let index = 0; index < offset; index++) {
    const char = command[index];
    if (state === "single") {
      if (char === "'") state = "none";
    } else if (char === "\\") index++;
    else if (char === '"') state = state === "double" ? "none" : "double";
    else if (char === "'" && state === "none") state = "single";
  }
  return state;
}

function reference(name: string, state: QuoteState): string {
  if (state === "double") return `\${${name}}`;
  if (state === "single") return `'"\${${name}}"'`;
  return `"\${${name}}"`;
}

/**
 * A key wrapped over two lines matches no pattern in either half, or only its first half.
 * At each line break the token ending one line and the token starting the next are put
 * together; where the two make a key (a known secret, or a provider key shape that the
 * first half is not alone, or one the second half plainly continues), both halves are
 * redacted. Each break is looked at once, with bounded tokens: linear time.
 */
function joinSplitSecrets(text: string, secrets: readonly string[]): string {
  const lines = text.split("\n");
  for (let index = 0; index + 1 < lines.length; index++) {
    const tail = lineTail.exec(lines[index]!)?.[0];
    const head = lineHead.exec(lines[index + 1]!)?.[0];
    if (tail === undefined || head === undefined) continue;
    const joined = tail + head;
    if (secrets.some((secret) => joined.includes(secret) && !tail.includes(secret) && !head.includes(secret)) || isSplitKey(tail, head)) {
      lines[index] = `${lines[index]!.slice(0, -tail.length)}${REDACTED}`;
      lines[index + 1] = `${REDACTED}${lines[index + 1]!.slice(head.length)}`;
    }
  }
  return lines.join("\n");
}

const keyShapes = secretRules.filter((rule) => rule.shape).map((rule) => new RegExp(`^(?:${rule.pattern.source})`));
const keyCharacters = /^[A-Za-z0-9_.-]{0,256}/;
const keyRunAtEnd = /[A-Za-z0-9_.-]{1,256}$/;

/**
 * A provider key shape that starts in `tail` and is complete only with `head`, or that is
 * complete in `tail` and that `head` continues: a run of key characters with letters and
 * digits (a word like "next" or "Traceback" is not taken for the rest of a key).
 */
function isSplitKey(tail: string, head: string): boolean {
  const run = keyRunAtEnd.exec(tail)?.[0];
  if (run === undefined) return false;
  const rest = keyCharacters.exec(head)?.[0] ?? "";
  const isKey = (value: string): boolean => keyShapes.some((shape) => shape.test(value));
  for (const prefix of keyPrefixes) {
    for (let start = run.indexOf(prefix); start >= 0; start = run.indexOf(prefix, start + 1)) {
      if (start > 0 && /[A-Za-z0-9_-]/.test(run[start - 1]!)) continue;
      const begun = run.slice(start);
      if (isKey(begun) ? rest.length >= 8 && /[0-9]/.test(rest) && /[A-Za-z]/.test(rest) : isKey(begun + rest)) return true;
    }
  }
  return false;
}

/** A `Basic` token after an Authorization header, or one that decodes to `user:password`. */
function isBasicCredential(groups: Record<string, string | undefined>, offset: number, text: string): boolean {
  if (/authori[sz]ation["']?\s{0,8}[:=]\s{0,8}["']?$/i.test(text.slice(Math.max(0, offset - 40), offset))) return true;
  const decoded = Buffer.from(groups.secret!, "base64").toString("latin1");
  return /^[\x20-\x7e]{1,256}:[\x20-\x7e]{1,256}$/.test(decoded);
}

/** Upper and lower case and digits, and close to the entropy of random base64. */
function looksRandom(token: string): boolean {
  if (!/[A-Z]/.test(token) || !/[a-z]/.test(token) || !/[0-9]/.test(token)) return false;
  const counts = new Map<string, number>();
  for (const char of token) counts.set(char, (counts.get(char) ?? 0) + 1);
  let entropy = 0;
  for (const count of counts.values()) entropy -= (count / token.length) * Math.log2(count / token.length);
  return entropy >= 4;
}

/**
 * Writes a text meant for people (reports, plans, analyses) atomically with its secrets
 * redacted: a key pasted into a topic or a log must not reach a report a3r writes.
 */
export async function writeRedactedFile(path: string, text: string): Promise<string> {
  const redacted = redactSecrets(text);
  await writeFileAtomic(path, redacted);
  return redacted;
}
