import { dirname, resolve } from "node:path";
import { parseDocument } from "yaml";
import { isFileRelative } from "../../blueprints/index.ts";

const frontMatterPattern = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(\r?\n|$)/;
const pathFields = ["codebase", "interpreter", "config"] as const;

/**
 * A topic may name its base experiment's paths relative to its own file (`../..`), so an
 * example works wherever its clone lies. The campaign keeps a copy of the topic in its own
 * folder (runs/<id>/topic.md), where those paths would point elsewhere: this returns the
 * text with them made absolute against `file`'s folder, comments and layout kept.
 */
export function topicTextWithAbsolutePaths(text: string, file: string): string {
  const match = frontMatterPattern.exec(text);
  if (!match) return text;
  const document = parseDocument(match[1]!);
  const folder = dirname(resolve(file));
  let changed = false;
  for (const field of pathFields) {
    const value = document.getIn(["base", field]);
    if (typeof value !== "string" || !isFileRelative(value)) continue;
    document.setIn(["base", field], resolve(folder, value));
    changed = true;
  }
  if (!changed) return text;
  return `---\n${document.toString().replace(/\n+$/, "")}\n---\n${text.slice(match[0].length)}`;
}
