import { basename } from "node:path";
import { parseDocument } from "yaml";
import { slugifyCampaignId } from "../../campaign/index.ts";
import { liftCommandSecrets, redactSecrets, secretReferencePattern, secretValuesFromEnv } from "../../core/redact.ts";
import type { Topic } from "../../leader/index.ts";

/**
 * The campaign keeps its own copy of the topic (runs/<id>/topic.md), and the leader reads
 * only that copy, also on resume. So whatever the command line changes (budgets, the hosts
 * file) is written into the copy's front matter, where a resumed leader finds it again.
 *
 * Left out: topics without front matter (a plain sentence has no budgets to override; the
 * heuristic planner stops and says what it needs).
 */
export interface TopicAdjustments {
  stages?: number;
  experiments?: number;
  /** An absolute hosts path to write, or null to remove `hosts:` (run on this machine). */
  hostsFile?: string | null;
  /** Turns human review on (`--review`). */
  review?: boolean;
}

const frontMatterPattern = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(\r?\n|$)/;

/** The topic text with its front matter adjusted; comments and layout elsewhere are kept. */
export function adjustTopicText(text: string, adjustments: TopicAdjustments): string {
  const match = frontMatterPattern.exec(text);
  if (!match) return text;
  const document = parseDocument(match[1]!);
  if (adjustments.stages !== undefined) document.setIn(["budgets", "stages"], adjustments.stages);
  if (adjustments.experiments !== undefined) document.setIn(["budgets", "experiments"], adjustments.experiments);
  if (adjustments.review !== undefined) document.setIn(["review"], adjustments.review);
  if (adjustments.hostsFile === null) document.deleteIn(["hosts"]);
  else if (adjustments.hostsFile !== undefined) document.setIn(["hosts"], adjustments.hostsFile);
  const front = document.toString().replace(/\n+$/, "");
  return `---\n${front}\n---\n${text.slice(match[0].length)}`;
}

/**
 * The campaign's copy of a topic holds no secret value: the question and the title are
 * redacted (they are read, never run), and the base command's literal secrets are lifted
 * into `${A3R_SECRET_*}` references (core/redact.ts), returned with their values for the
 * leader to pass its workers through the environment. Everything the leader derives from
 * the copy (plans, stage blueprints, result directories, its checkpoint) inherits that.
 *
 * Left out: other front-matter fields (overrides reach a config file, where no shell
 * expands a reference; `a3r blueprint validate` and the redaction of every record cover them).
 */
export function liftTopicSecrets(text: string, knownSecrets: string[] = secretValuesFromEnv()): { text: string; secrets: Record<string, string> } {
  const match = frontMatterPattern.exec(text);
  if (!match) return { text: redactSecrets(text, knownSecrets), secrets: {} };
  const body = redactSecrets(text.slice(match[0].length), knownSecrets);
  const document = parseDocument(match[1]!);
  const command = document.getIn(["base", "command"]);
  const lifted = typeof command === "string" ? liftCommandSecrets(command, knownSecrets) : { command, secrets: {} };
  const title = document.get("title");
  const redactedTitle = typeof title === "string" ? redactSecrets(title, knownSecrets) : title;
  if (lifted.command === command && redactedTitle === title) return { text: `${match[0]}${body}`, secrets: {} };
  if (lifted.command !== command) document.setIn(["base", "command"], lifted.command);
  if (redactedTitle !== title) document.set("title", redactedTitle);
  return { text: `---\n${document.toString().replace(/\n+$/, "")}\n---\n${body}`, secrets: lifted.secrets };
}

/** The `${A3R_SECRET_*}` references of a topic's base command that this environment does not set. */
export function missingSecretReferences(topic: { base?: { command: string } }, env: NodeJS.ProcessEnv = process.env): string[] {
  const names = [...(topic.base?.command ?? "").matchAll(secretReferencePattern)].map((found) => found[1]!);
  return [...new Set(names)].filter((name) => !env[name]);
}

export function hasFrontMatter(text: string): boolean {
  return frontMatterPattern.test(text);
}

/** A campaign id from the topic's title, else from its file name. */
export function campaignIdFor(topic: Topic, file: string): string {
  const fromTitle = slugifyCampaignId(topic.title).slice(0, 48).replace(/-+$/, "");
  if (fromTitle !== "" && fromTitle !== "campaign") return fromTitle;
  return slugifyCampaignId(basename(file).replace(/\.md$/i, ""));
}

/** `demo-20261129-114203`: sortable, one per second, a valid campaign id. */
export function demoCampaignId(now: Date): string {
  const iso = now.toISOString();
  return `demo-${iso.slice(0, 10).replaceAll("-", "")}-${iso.slice(11, 19).replaceAll(":", "")}`;
}
