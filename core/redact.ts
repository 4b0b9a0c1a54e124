import { writeFileAtomic } from "./atomic-file.ts";

/**
 * Removes secrets before text leaves the machine (LLM prompts, reports, logs shown to
 * people). Patterns cover the key formats of the providers we talk to plus generic
 * `KEY=value` assignments whose name says secret; known secret values from the environment
 * are replaced too, whatever their shape.
 */
const secretPatterns: RegExp[] = [
  /sk-ant-[A-Za-z0-9_-]{10,}/g,
  /sk-(?:proj-)?[A-Za-z0-9_-]{16,}/g,
  /gh[pousr]_[A-Za-z0-9]{20,}/g,
  /hf_[A-Za-z0-9]{20,}/g,
  /AKIA[0-9A-Z]{16}/g,
  /xox[abpr]-[A-Za-z0-9-]{10,}/g,
  /-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----[\s\S]{0,16384}?-----END [A-Z ]{0,40}PRIVATE KEY-----/g,
  /(Bearer\s+)[A-Za-z0-9._~+/=-]{12,}/g,
];

// A name that ENDS in a secret word (api_key, HF_TOKEN, "wandb_api_key"), so max_tokens,
// num_tokens and tokenizer keep their values; the name may be quoted (JSON, Python dicts)
// and purely numeric values are left alone. Every repetition is bounded, so no input makes
// a pattern scan more than a fixed window from each position (linear time).
const namedSecret = /\b([A-Za-z0-9_-]{0,64}(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD))\b(["']?)(\s{0,8}[=:]\s{0,8})(["']?)(?!\d+\b)([^\s"',}]{4,512})\4/gi;
// Command-line flags: --api-key VALUE, --hf-token=VALUE.
const flagSecret = /(--?[A-Za-z0-9-]{0,64}(?:key|token|secret|password))(\s{1,8}|=)(?!-)(["']?)([^\s"']{4,512})\3/gi;
// Credentials inside URLs: scheme://user:password@host.
const urlCredentials = /(:\/\/[^/\s:@]{1,256}:)([^@\s]{1,256})(@)/g;
// An AWS secret access key carries no prefix: 40 characters of base64 letters. Among such
// runs only those that look random (upper and lower case and digits, high entropy) are
// taken, so a git sha (lower-case hex) or a word is left alone.
const unlabeledSecret = /(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])/g;
// Where a log wraps a key over two lines: the end of one line and the start of the next.
const lineTail = /\S{1,256}$/;
const lineHead = /^\S{1,256}/;
const keyPrefixes = ["sk-", "gh", "hf_", "AKIA", "xox"];

export const REDACTED = "[REDACTED]";

export function secretValuesFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.entries(env)
    .filter(([name, value]) => value && value.length >= 8 && /KEY|TOKEN|SECRET|PASSWORD/i.test(name))
    .map(([, value]) => value as string);
}

export function redactSecrets(text: string, knownSecrets: string[] = secretValuesFromEnv()): string {
  // Longest first, so a secret that contains a shorter one is removed whole.
  const secrets = [...knownSecrets].filter((secret) => secret.length >= 8).sort((a, b) => b.length - a.length);
  let result = joinSplitSecrets(text, secrets);
  for (const secret of secrets) result = result.split(secret).join(REDACTED);
  for (const pattern of secretPatterns) {
    result = result.replace(pattern, (match, prefix) =>
      typeof prefix === "string" && match.startsWith(prefix) && prefix.trim() === "Bearer" ? `${prefix}${REDACTED}` : REDACTED,
    );
  }
  return result
    .replace(unlabeledSecret, (match) => (looksRandom(match) ? REDACTED : match))
    .replace(urlCredentials, `$1${REDACTED}$3`)
    .replace(namedSecret, (_match, name, nameQuote, separator, quote) => `${name}${nameQuote}${separator}${quote}${REDACTED}${quote}`)
    .replace(flagSecret, (_match, flag, separator, quote) => `${flag}${separator}${quote}${REDACTED}${quote}`);
}

/**
 * A key wrapped over two lines matches no pattern in either half. At each line break the
 * token ending one line and the token starting the next are put together; where the two
 * make a key (a known secret, or a provider key shape that neither half is alone), both
 * halves are redacted. Each break is looked at once, with bounded tokens: linear time.
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

const keyShapes = secretPatterns.slice(0, 6).map((pattern) => new RegExp(`^(?:${pattern.source})`));

/** A provider key shape that starts in `tail` and is complete only with `head`. */
function isSplitKey(tail: string, head: string): boolean {
  const start = Math.max(...keyPrefixes.map((prefix) => tail.lastIndexOf(prefix)));
  if (start < 0) return false;
  const begun = tail.slice(start);
  if (!/^[A-Za-z0-9_-]*$/.test(begun)) return false;
  const isKey = (value: string): boolean => keyShapes.some((shape) => shape.test(value));
  return isKey(begun + (/^[A-Za-z0-9_-]*/.exec(head)?.[0] ?? "")) && !isKey(begun);
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
