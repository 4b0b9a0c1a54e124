/**
 * Which words of a command name a place the policy protects, decided in code rather than
 * in each rule's regular expression: a glob such as `/???/` or `/e*` is matched against
 * the real top-level names, which no pattern could do without backtracking. The command
 * units mark such words (see `protectedMark`), and the default rules look for the marks.
 */

/** Put before a word naming the root, a home, a top-level folder or anything the system runs from. */
export const protectedMark = "\x01";
/** Put before the part of a word naming a credentials file or folder (`file=@~/.ssh/id_rsa`). */
export const credentialsMark = "\x03";
/** Put before a file this command downloaded, where a shell runs it. */
export const downloadedMark = "\x02";
/** Put, instead of `credentialsMark`, before a path into an ~/.ssh folder. */
export const sshMark = "\x04";
/**
 * Put before a word naming a whole mount or data folder that is not the system's but not
 * one run's either (`/data`, `/scratch/*`, `/var/lib`, `/mnt/disk1`, `~/.config`): the
 * deletion rules protect it, the container and permission rules do not (`-v /data:/data`).
 */
export const dataFolderMark = "\x05";
/** Put before a home's shell startup file (`~/.bashrc`, `/root/.profile`), at the word's start or after `=`. */
export const startupFileMark = "\x06";
/** The marks, removed from input first so that a command cannot forge one. */
export const anyMark = /[\x01-\x06]/g;

// Top-level folders: deleting, moving or opening one to everyone breaks the machine.
const topLevel = [
  "bin",
  "boot",
  "dev",
  "etc",
  "home",
  "lib",
  "lib32",
  "lib64",
  "libx32",
  "media",
  "mnt",
  "opt",
  "proc",
  "root",
  "run",
  "sbin",
  "snap",
  "srv",
  "sys",
  "tmp",
  "usr",
  "var",
];
// Folders the system runs from: nothing under them belongs to a run.
const systemTrees = new Set(["bin", "boot", "etc", "lib", "lib32", "lib64", "libx32", "sbin", "usr", "sys", "proc"]);
const credentials = [".ssh", ".aws", ".config/gcloud", ".gnupg", ".kube", ".netrc", ".git-credentials", ".docker/config.json"];

/** A path, as the command units write it (absolute paths normalized), that the policy protects. */
export function isProtectedPath(path: string): boolean {
  const home = /^(?:~(?:[a-z_][\w-]{0,31})?|\$HOME)(?=\/|$)/.exec(path);
  if (home) return homeOrAbove(path.slice(home[0].length));
  if (!path.startsWith("/")) return false;
  const parts = folderParts(path);
  if (parts.length === 0) return true;
  const first = parts[0]!;
  if (/[*?[]/.test(first)) return topLevel.some((name) => globMatches(first, name));
  if (systemTrees.has(first)) return true;
  if (parts.length === 1) return topLevel.includes(first);
  return first === "home" && parts.length === 2;
}

/** A path's components, the trailing ones that mean "what is in it" (`/x/*`, `/x/.*`, `/x/.`) dropped. */
function folderParts(path: string): string[] {
  const parts = path.split("/").filter((part) => part !== "");
  while (parts.length > 0 && /^(?:\*|\.\*|\.)$/.test(parts[parts.length - 1]!)) parts.pop();
  return parts;
}

/**
 * Whether what follows `~` names the home itself, all its dot files (`~/.[!.]*`, `~/.??*`)
 * or climbs out of it: `~/..` is `/home`, `~/x/..` is the home, `~/../bob` someone else's.
 */
function homeOrAbove(rest: string): boolean {
  const parts = folderParts(rest);
  if (parts.length === 1 && /^\.[*?[]/.test(parts[0]!)) return true;
  let depth = 0;
  for (const part of parts) {
    if (part === "..") depth -= 1;
    else if (part !== ".") depth += 1;
    if (depth < 0) return true;
  }
  return depth === 0;
}

// A home's own folders of settings and installed programs: deleting one is no cleanup.
const homeDataFolders = new Set([".config", ".local"]);

/**
 * A whole folder that holds what is not one run's, outside the system's own (those are
 * `isProtectedPath`'s): any top-level folder (`/data`, `/scratch/*`, `/da*`), a folder of
 * `/var` or `/var/lib`, a mount point under `/mnt` or `/media`, a home's `.config` or
 * `.local`. A run's own folder below one (`/data/runs/x`, `/var/lib/apt/lists`) is not.
 */
export function isDataFolder(path: string): boolean {
  const home = /^(?:~|\$HOME|\/root|\/home\/[^/]+)(?=\/)/.exec(path);
  if (home) {
    const parts = folderParts(path.slice(home[0].length));
    if (parts.length === 1 && homeDataFolders.has(parts[0]!)) return true;
  }
  if (!path.startsWith("/")) return false;
  const parts = folderParts(path);
  if (parts.length === 1) return true;
  const [first, second] = parts;
  if (parts.length === 2) return first === "var" || first === "mnt" || first === "media";
  return parts.length === 3 && first === "var" && second === "lib";
}

const startupFiles = new Set([
  ".bashrc",
  ".bash_profile",
  ".bash_login",
  ".profile",
  ".zshrc",
  ".zprofile",
  ".zshenv",
  ".zlogin",
  ".kshrc",
  ".mkshrc",
  ".cshrc",
  ".tcshrc",
  ".login",
]);

/** Where in `word` a home's shell startup file starts (at the word's start or after `=`, as in `of=~/.bashrc`), or -1. */
export function startupFileStart(word: string): number {
  const equals = word.indexOf("=");
  for (const start of equals === -1 ? [0] : [0, equals + 1]) {
    const home = /^(?:~(?:[a-z_][\w-]{0,31})?|\$HOME|\/root|\/home\/[^/]+)\//.exec(word.slice(start, start + 256));
    if (home && startupFiles.has(word.slice(start + home[0].length))) return start;
  }
  return -1;
}

/** Where in `word` a credentials path starts (at the word's start or after `=`, `@`, `:`, `,`), or -1. */
export function credentialsStart(word: string): number {
  for (let i = 0; i < word.length; i += 1) {
    if (i > 0 && !"=@:,".includes(word[i - 1]!)) continue;
    const home = /^(?:~|\$HOME|\/root|\/home\/[^/]+)\//.exec(word.slice(i, i + 256));
    if (!home) continue;
    const rest = word.slice(i + home[0].length);
    if (credentials.some((name) => rest === name || rest.startsWith(`${name}/`) || rest.startsWith(`${name}:`) || rest.startsWith(`${name},`))) return i;
  }
  return -1;
}

/**
 * Shell glob matching of one path component (`*`, `?`, `[...]`), by the linear
 * two-pointer method with one backtrack point: never exponential, whatever the glob.
 */
export function globMatches(glob: string, name: string): boolean {
  let g = 0;
  let n = 0;
  let starGlob = -1;
  let starName = 0;
  while (n < name.length) {
    const token = glob[g];
    if (token === "*") {
      starGlob = g;
      starName = n;
      g += 1;
      continue;
    }
    const step = token === undefined ? undefined : matchOne(glob, g, name[n]!);
    if (step !== undefined) {
      g = step;
      n += 1;
    } else if (starGlob !== -1) {
      g = starGlob + 1;
      starName += 1;
      n = starName;
    } else return false;
  }
  while (glob[g] === "*") g += 1;
  return g === glob.length;
}

/** If the glob token at `g` matches `char`, the index after the token. */
function matchOne(glob: string, g: number, char: string): number | undefined {
  const token = glob[g]!;
  if (token === "?") return g + 1;
  if (token === "[") {
    const close = glob.indexOf("]", g + 2);
    if (close !== -1) {
      let body = glob.slice(g + 1, close);
      const negated = body.startsWith("!") || body.startsWith("^");
      if (negated) body = body.slice(1);
      let inside = false;
      for (let i = 0; i < body.length; i += 1) {
        if (body[i + 1] === "-" && i + 2 < body.length) {
          if (char >= body[i]! && char <= body[i + 2]!) inside = true;
          i += 2;
        } else if (body[i] === char) inside = true;
      }
      return inside !== negated ? close + 1 : undefined;
    }
  }
  return token === char ? g + 1 : undefined;
}

/**
 * The word with its marks: a protected path (the whole word, a `SRC:DST` volume's source,
 * an option's `=value` or `-vVALUE`, a mount's `source=`) gets `protectedMark` before it,
 * a whole data folder (the whole word only) `dataFolderMark`, a home's shell startup file
 * `startupFileMark`, a credentials path `credentialsMark`.
 */
export function markWord(word: string): string {
  if (isProtectedPath(word)) return `${protectedMark}${word}`;
  if (isDataFolder(word)) return `${dataFolderMark}${word}`;
  const startupAt = startupFileStart(word);
  if (startupAt !== -1) return `${word.slice(0, startupAt)}${startupFileMark}${word.slice(startupAt)}`;
  let marked = word;
  const protectedAt = protectedPartStart(word);
  if (protectedAt !== -1) marked = `${word.slice(0, protectedAt)}${protectedMark}${word.slice(protectedAt)}`;
  const shift = marked.length - word.length;
  const credentialsAt = credentialsStart(word);
  if (credentialsAt !== -1) {
    const at = credentialsAt + (protectedAt !== -1 && protectedAt <= credentialsAt ? shift : 0);
    const mark = /^(?:~|\$HOME|\/root|\/home\/[^/]+)\/\.ssh(?:[/:,]|$)/.test(word.slice(credentialsAt)) ? sshMark : credentialsMark;
    marked = `${marked.slice(0, at)}${mark}${marked.slice(at)}`;
  }
  return marked;
}

// Top-level folders a container may be given whole (`-v /tmp:/tmp`): scratch space, not the system.
const sharedScratch = /^\/(?:tmp|opt|mnt|media|srv|snap)(?:\/|$)/;

function protectedPartStart(word: string): number {
  const candidates: number[] = [0];
  const equals = word.indexOf("=");
  if (equals !== -1) candidates.push(equals + 1);
  if (/^-v[^ ]/.test(word)) candidates.push(2);
  for (const key of ["source=", "src="]) {
    const at = word.indexOf(key);
    if (at !== -1 && (at === 0 || word[at - 1] === ",")) candidates.push(at + key.length);
  }
  for (const start of candidates) {
    const rest = word.slice(start);
    const end = rest.search(/[:,]/);
    const part = end === -1 ? rest : rest.slice(0, end);
    if (part !== word && part !== "" && isProtectedPath(part) && !sharedScratch.test(part)) return start;
  }
  return -1;
}
