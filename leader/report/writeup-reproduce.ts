import { basename, dirname, join } from "node:path";
import { formatNumber } from "../domain/configurations.ts";
import type { WriteupBlock, WriteupInputs, WriteupRun, WriteupSection } from "./writeup-types.ts";

/**
 * The write-up's "how to reproduce": one command per number. A run's score: its blueprint
 * run again by a worker into a fresh result directory (`repro/<id>/`, the original is left
 * alone). A configuration's mean: its runs, one after the other, in one command line. Every
 * figure of the document from the runs on disk: `a3r report`. The whole campaign anew:
 * `a3r research` on its topic copy. Paths are the campaign's own, quoted for a POSIX shell.
 */
export function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

export function reproduceSection(inputs: WriteupInputs): WriteupSection {
  const { model, campaignRoot } = inputs;
  const runsDir = dirname(campaignRoot);
  const id = basename(campaignRoot);
  const stageOf = new Map(model.experiments.map((row) => [row.blueprintId, row.stage]));
  const runCommand = (blueprintId: string): string =>
    `a3r worker run ${shellQuote(join(campaignRoot, "stages", String(stageOf.get(blueprintId) ?? 1), "blueprints", `${blueprintId}.md`))} --result-dir ${shellQuote(join(campaignRoot, "repro", blueprintId))}`;
  const perConfiguration: WriteupRun[][] = model.configurations.map((row) => {
    const runs = model.experiments.filter((experiment) => experiment.configurationId === row.id);
    return [`${row.id} (mean ${formatNumber(row.mean)} over ${row.n} seed(s)): `, { code: runs.map((run) => runCommand(run.blueprintId)).join(" && ") }];
  });
  const blocks: WriteupBlock[] = [
    { kind: "paragraph", runs: ["Every figure of this document, recomputed from the runs on disk (no model call, nothing launched):"] },
    { kind: "code", lines: [`a3r report ${shellQuote(id)} --runs-dir ${shellQuote(runsDir)}`] },
    { kind: "paragraph", runs: ["The whole campaign run again, as a new campaign beside this one:"] },
    {
      kind: "code",
      lines: [`a3r research ${shellQuote(join(campaignRoot, "topic.md"))} --runs-dir ${shellQuote(runsDir)} --campaign ${shellQuote(`${id}-again`)}`],
    },
    { kind: "paragraph", runs: ["Each run's score (the Results table), one command each; its curve lands in repro/<run id>/metrics.jsonl:"] },
    {
      kind: "code",
      lines: model.experiments.map((row) => `${runCommand(row.blueprintId)}   # ${row.configurationId}, seed ${row.seed}: score ${formatNumber(row.score)}`),
    },
    { kind: "paragraph", runs: ["Each configuration's mean, its runs in one command line:"] },
    { kind: "list", items: perConfiguration },
    { kind: "paragraph", runs: ["(", { code: "a3r" }, " is ", { code: "node bin/a3r.js" }, " in a checkout of a3r.)"] },
  ];
  return { id: "reproduce", title: "6. How to reproduce each number", blocks };
}
