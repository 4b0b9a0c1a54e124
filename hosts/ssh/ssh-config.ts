import { homedir } from "node:os";

/**
 * Resolves a host alias through an OpenSSH client config (`~/.ssh/config`) the way `ssh`
 * does for the four settings a3r needs: HostName, Port, User and IdentityFile.
 *
 * OpenSSH rules kept: keywords are case-insensitive and take `Key value` or `Key=value`;
 * the first value obtained for a setting wins (so specific `Host` blocks go first and
 * `Host *` last); a `Host` line matches when any of its patterns matches (`*`, `?`) and
 * none of its negated patterns (`!pattern`) does; IdentityFile accumulates; `%h` in
 * HostName is the alias, `%%` a percent; `~` is the home folder.
 *
 * Left out: `Match` blocks (skipped, with a note in `ignored`), `Include` (noted too),
 * canonicalization, and every other setting (ProxyJump, ciphers ...): a3r connects with
 * ssh2, not the ssh binary.
 */
export interface SshAliasSettings {
  hostName: string | undefined;
  port: number | undefined;
  user: string | undefined;
  identityFiles: string[];
  /** Directives that would matter but are not followed, e.g. "Include at line 3". */
  ignored: string[];
}

interface Directive {
  keyword: string;
  value: string;
  line: number;
}

function parseDirectives(text: string): Directive[] {
  const directives: Directive[] = [];
  const lines = text.split(/\r?\n/);
  for (let index = 0; index < lines.length; index += 1) {
    const trimmed = (lines[index] ?? "").trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const match = /^(\S+?)(?:\s*=\s*|\s+)(.*)$/.exec(trimmed);
    if (!match) continue;
    directives.push({ keyword: match[1]!.toLowerCase(), value: match[2]!.trim(), line: index + 1 });
  }
  return directives;
}

/** Splits a value into words; double quotes group words with spaces. */
function words(value: string): string[] {
  const result: string[] = [];
  const pattern = /"([^"]*)"|(\S+)/g;
  for (let match = pattern.exec(value); match; match = pattern.exec(value)) result.push(match[1] ?? match[2]!);
  return result;
}

/** OpenSSH glob: `*` any run of characters, `?` one character; case-insensitive for host names. */
export function matchesHostPattern(host: string, pattern: string): boolean {
  const expression = pattern
    .split("")
    .map((character) => (character === "*" ? ".*" : character === "?" ? "." : character.replace(/[.+^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${expression}$`, "i").test(host);
}

function hostLineMatches(alias: string, patterns: string[]): boolean {
  let matched = false;
  for (const pattern of patterns) {
    if (pattern.startsWith("!")) {
      if (matchesHostPattern(alias, pattern.slice(1))) return false;
    } else if (matchesHostPattern(alias, pattern)) {
      matched = true;
    }
  }
  return matched;
}

function expandHome(path: string, home: string): string {
  if (path === "~") return home;
  return path.startsWith("~/") ? `${home}/${path.slice(2)}` : path;
}

function expandTokens(value: string, alias: string): string {
  return value.replace(/%([%h])/g, (_whole, token: string) => (token === "%" ? "%" : alias));
}

export function resolveSshAlias(configText: string, alias: string, home: string = homedir()): SshAliasSettings {
  const settings: SshAliasSettings = { hostName: undefined, port: undefined, user: undefined, identityFiles: [], ignored: [] };
  // Lines before the first Host or Match apply to every host, as in OpenSSH.
  let active = true;
  for (const directive of parseDirectives(configText)) {
    if (directive.keyword === "host") {
      active = hostLineMatches(alias, words(directive.value));
      continue;
    }
    if (directive.keyword === "match") {
      active = false;
      settings.ignored.push(`Match at line ${directive.line}`);
      continue;
    }
    if (!active) continue;
    const [first] = words(directive.value);
    if (first === undefined) continue;
    switch (directive.keyword) {
      case "hostname":
        settings.hostName ??= expandTokens(first, alias);
        break;
      case "port": {
        const port = Number(first);
        if (settings.port === undefined && Number.isInteger(port) && port > 0 && port < 65536) settings.port = port;
        break;
      }
      case "user":
        settings.user ??= first;
        break;
      case "identityfile":
        settings.identityFiles.push(expandHome(expandTokens(first, alias), home));
        break;
      case "include":
        settings.ignored.push(`Include at line ${directive.line}`);
        break;
      default:
        break;
    }
  }
  return settings;
}
