import { readFileSync } from "node:fs";

/** One group of a policy corpus file: its name, the rules its lines must break (if any), its lines. */
export interface CorpusGroup {
  name: string;
  rules: string[];
  lines: string[];
}

/**
 * Reads a corpus file: `## name: rule rule` starts a group, `#` lines are comments, every
 * other non-empty line is one command, with `<NL>` standing for a newline inside it.
 */
export function readCorpus(url: URL): CorpusGroup[] {
  const groups: CorpusGroup[] = [];
  for (const raw of readFileSync(url, "utf8").split("\n")) {
    const header = /^## ([\w-]+)(?::(.*))?$/.exec(raw);
    if (header) {
      groups.push({ name: header[1]!, rules: (header[2] ?? "").trim().split(/\s+/).filter(Boolean), lines: [] });
      continue;
    }
    if (raw.trim() === "" || raw.startsWith("#")) continue;
    const group = groups[groups.length - 1];
    if (!group) throw new Error(`${url.pathname}: a command before the first "## group" header: ${raw}`);
    group.lines.push(raw.replaceAll("<NL>", "\n"));
  }
  return groups;
}
