import { join } from "node:path";
import type { CampaignPaths } from "../../campaign/index.ts";
import { writeRedactedFile } from "../../core/redact.ts";
import type { Topic } from "../domain/topic.ts";
import { campaignReportModel, reportInputFromFiles } from "./campaign-report.ts";
import type { ChatModel } from "../../llm/index.ts";
import { buildWriteup } from "./writeup-model.ts";
import { draftWriteupProse, withDraft, type WriteupDraft } from "./writeup-draft.ts";
import { renderWriteupHtml, renderWriteupMarkdown } from "./writeup-render.ts";

/**
 * `a3r writeup ID`: writes `writeup.md` and `writeup.html` into the campaign folder, from
 * the same figures as the report (rebuilt from the files, no model call), so the document's
 * links to `results/<id>/` and `report.html` resolve where it lies. The prose is the
 * templates' (writeup-model.ts); with a model given (`--llm`), it also drafts an abstract and
 * a discussion from that document, shown apart with its numbers checked (writeup-draft.ts).
 */
export interface WrittenWriteup {
  markdownFile: string;
  htmlFile: string;
  markdown: string;
  html: string;
  /** Whether the campaign had reported (a finished campaign); the document says so when it had not. */
  finished: boolean;
  draft?: WriteupDraft;
}

export async function writeCampaignWriteup(paths: CampaignPaths, topic: Topic, options: { model?: ChatModel } = {}): Promise<WrittenWriteup> {
  const input = await reportInputFromFiles(paths, topic);
  const model = await campaignReportModel(input);
  const facts = buildWriteup({ model, topic, history: input.history, campaignRoot: paths.root });
  const draft = options.model ? await draftWriteupProse(options.model, renderWriteupMarkdown(facts)) : undefined;
  const document = draft ? withDraft(facts, draft) : facts;
  const markdownFile = join(paths.root, "writeup.md");
  const htmlFile = join(paths.root, "writeup.html");
  const markdown = await writeRedactedFile(markdownFile, renderWriteupMarkdown(document));
  const html = await writeRedactedFile(htmlFile, renderWriteupHtml(document, model));
  return { markdownFile, htmlFile, markdown, html, finished: input.stop !== null, ...(draft ? { draft } : {}) };
}
