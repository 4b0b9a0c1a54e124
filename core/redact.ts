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

const namedSecret = /\b([A-Za-z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)[A-Za-z0-9_]*)(\s*[=:]\s*)(["']?)([^\s"']{4,})\3/gi;

export const REDACTED = "[REDACTED]";

export function secretValuesFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.entries(env)
    .filter(([name, value]) => value && value.length >= 8 && /KEY|TOKEN|SECRET|PASSWORD/i.test(name))
    .map(([, value]) => value as string);
}

export function redactSecrets(text: string, knownSecrets: string[] = secretValuesFromEnv()): string {
  let result = text;
  for (const secret of knownSecrets) {
    if (secret.length >= 8) result = result.split(secret).join(REDACTED);
  }
  for (const pattern of secretPatterns) {
    result = result.replace(pattern, (match, prefix) =>
      typeof prefix === "string" && match.startsWith(prefix) && prefix.trim() === "Bearer" ? `${prefix}${REDACTED}` : REDACTED,
    );
  }
  return result.replace(namedSecret, (_match, name, separator, quote) => `${name}${separator}${quote}${REDACTED}${quote}`);
}
