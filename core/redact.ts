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
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
  /(Bearer\s+)[A-Za-z0-9._~+/=-]{12,}/g,
];

// A name that ENDS in a secret word (api_key, HF_TOKEN, "wandb_api_key"), so max_tokens,
// num_tokens and tokenizer keep their values; the name may be quoted (JSON, Python dicts)
// and purely numeric values are left alone.
const namedSecret = /\b([A-Za-z0-9_-]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD))\b(["']?)(\s*[=:]\s*)(["']?)(?!\d+\b)([^\s"',}]{4,})\4/gi;
// Command-line flags: --api-key VALUE, --hf-token=VALUE.
const flagSecret = /(--?[A-Za-z0-9-]*(?:key|token|secret|password))(\s+|=)(?!-)(["']?)([^\s"']{4,})\3/gi;
// Credentials inside URLs: scheme://user:password@host.
const urlCredentials = /(:\/\/[^/\s:@]+:)([^@\s]+)(@)/g;

export const REDACTED = "[REDACTED]";

export function secretValuesFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.entries(env)
    .filter(([name, value]) => value && value.length >= 8 && /KEY|TOKEN|SECRET|PASSWORD/i.test(name))
    .map(([, value]) => value as string);
}

export function redactSecrets(text: string, knownSecrets: string[] = secretValuesFromEnv()): string {
  let result = text;
  // Longest first, so a secret that contains a shorter one is removed whole.
  for (const secret of [...knownSecrets].sort((a, b) => b.length - a.length)) {
    if (secret.length >= 8) result = result.split(secret).join(REDACTED);
  }
  for (const pattern of secretPatterns) {
    result = result.replace(pattern, (match, prefix) =>
      typeof prefix === "string" && match.startsWith(prefix) && prefix.trim() === "Bearer" ? `${prefix}${REDACTED}` : REDACTED,
    );
  }
  return result
    .replace(urlCredentials, `$1${REDACTED}$3`)
    .replace(namedSecret, (_match, name, nameQuote, separator, quote) => `${name}${nameQuote}${separator}${quote}${REDACTED}${quote}`)
    .replace(flagSecret, (_match, flag, separator, quote) => `${flag}${separator}${quote}${REDACTED}${quote}`);
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
