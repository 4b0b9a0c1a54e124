import { measurementLine } from "./measurement-line.ts";
import { formatNumber } from "../domain/configurations.ts";
import type { ContrastMember, ContrastVerdict } from "../domain/contrast-verdicts.ts";
import { refusedText } from "./answer.ts";
import type { CampaignReportModel, ConfigurationRow, ExperimentRow } from "./model.ts";
import { levelText } from "./question-answer.ts";
import { testText } from "../analysis/test-text.ts";
import { reproduceSection } from "./writeup-reproduce.ts";
import type { WriteupBlock, WriteupDocument, WriteupInputs, WriteupRun, WriteupSection } from "./writeup-types.ts";

/**
 * `a3r writeup`: a finished campaign as a paper-style document (abstract, question, method,
 * results with the report's figures, what was decided and what not, threats to validity,
 * how to reproduce each number), built as plain data from the report's computed model, so
 * writeup.md and writeup.html say the same thing and no number comes from a model. Every
 * number is a link: a run's score to its result directory, a configuration's mean and
 * interval to the list of its runs (`#cfg-<id>`), a contrast's effect to the runs of both
 * sides. Pure.
 */
export type { WriteupBlock, WriteupDocument, WriteupInputs, WriteupRun, WriteupSection } from "./writeup-types.ts";

/** The anchor of a configuration's list of runs. */
export function configurationAnchor(id: string): string {
  return `cfg-${id.replace(/[^A-Za-z0-9_.-]/g, "-")}`;
}

const verdictWords = {
  worse: "worse beyond seed noise",
  equivalent: "the same within the margin",
  open: "open (within seed noise)",
  undecidable: "fewer than two seeds",
} as const;

const toConfiguration = (id: string, text: string): WriteupRun => ({ text, href: `#${configurationAnchor(id)}` });

export function buildWriteup(inputs: WriteupInputs): WriteupDocument {
  const { model } = inputs;
  return {
    title: model.title,
    campaignId: model.campaignId,
    sections: [
      { id: "abstract", title: "Abstract", blocks: [{ kind: "paragraph", runs: abstractRuns(inputs) }] },
      questionSection(inputs),
      methodSection(inputs),
      resultsSection(inputs),
      decidedSection(inputs),
      threatsSection(inputs),
      reproduceSection(inputs),
    ],
  };
}

function abstractRuns(inputs: WriteupInputs): WriteupRun[] {
  const { model, topic } = inputs;
  const scored = model.configurations.filter((row) => row.n > 0);
  const seeds = scored.map((row) => row.n);
  const runs: WriteupRun[] = [
    `We asked: ${model.question.split("\n")[0]!.trim()} `,
    `We ran ${model.experiments.length} run(s) in ${model.stages.length} stage(s) on ${model.configurations.length} configuration(s) of ${Object.keys(topic.knobs).join(", ") || "no knob"}`,
    seeds.length > 0 ? ` (${Math.min(...seeds)} to ${Math.max(...seeds)} scored seed(s) each), ` : ", ",
    `scored by ${model.metric?.label ?? "no metric"}. `,
  ];
  for (const verdict of model.contrasts) runs.push(...contrastRuns(verdict, model.metric?.equivalence), " ");
  const best = model.configurations.find((row) => row.isBest);
  if (best) {
    runs.push(
      "The best configuration measured is ",
      { strong: best.id },
      " (mean ",
      toConfiguration(best.id, formatNumber(best.mean)),
      ` over ${best.n} seed(s)). `,
    );
  }
  runs.push(decisionSentence(model));
  return runs;
}

function decisionSentence(model: CampaignReportModel): string {
  const status = model.comparisons?.status;
  const stop = model.stop ? ` The campaign stopped: ${model.stop.reason}.` : " The campaign has not stopped.";
  if (status === "separated") return `It is better than every other configuration beyond seed noise.${stop}`;
  if (status === "tied") return `A tie at the top within the equivalence margin; the rest are worse beyond seed noise.${stop}`;
  if (status === "open") return `It is not separated from every other configuration: see what was not decided.${stop}`;
  return `No other configuration was scored to compare it with.${stop}`;
}

const answerWords: Record<ContrastVerdict["answer"], string> = {
  yes: "yes",
  no: "no",
  equivalent: "no difference within the margin",
  "not decided": "not decided",
};

/** "Smaller lr vs the baseline lr=0.1: does it help? No: lr-0.01 is worse by 0.2 (interval [..], Holm p ..)." with links. */
export function contrastRuns(verdict: ContrastVerdict, equivalence: number | undefined): WriteupRun[] {
  const text = verdict.contrast.text;
  const runs: WriteupRun[] = [`${text.charAt(0).toUpperCase()}${text.slice(1)} `, { strong: answerWords[verdict.answer] }, ": "];
  const lead = verdict.lead;
  if (!lead || verdict.baselineId === undefined) return [...runs, "nothing on that side of the baseline (or the baseline itself) was scored."];
  runs.push(...memberRuns(lead, verdict.baselineId, equivalence), ".");
  return runs;
}

function memberRuns(member: ContrastMember, baselineId: string, equivalence: number | undefined): WriteupRun[] {
  const words =
    member.verdict === "better" || member.verdict === "worse"
      ? `${member.verdict} beyond seed noise`
      : member.verdict === "equivalent"
        ? `the same within the margin ${formatNumber(equivalence)}`
        : member.verdict === "open"
          ? "within seed noise"
          : "with too few seeds to compare";
  const runs: WriteupRun[] = [
    toConfiguration(member.configurationId, member.configurationId),
    ` is ${member.advantage >= 0 ? "better" : "worse"} than the `,
    toConfiguration(baselineId, "baseline"),
    " by ",
    toConfiguration(member.configurationId, formatNumber(Math.abs(member.advantage))),
  ];
  if (member.low !== undefined)
    runs.push(
      ` (Holm-adjusted ${levelText(member.level)} interval of the difference `,
      toConfiguration(member.configurationId, `[${formatNumber(member.low)}, ${formatNumber(member.high)}]`),
      ", Holm p ",
      toConfiguration(member.configurationId, formatNumber(member.pHolm)),
      ")",
    );
  runs.push(`, ${words}`);
  return runs;
}

function questionSection(inputs: WriteupInputs): WriteupSection {
  const { model } = inputs;
  const blocks: WriteupBlock[] = model.question
    .split(/\n\s*\n/)
    .filter((paragraph) => paragraph.trim() !== "")
    .map((paragraph) => ({ kind: "paragraph", runs: [paragraph.trim()] }));
  blocks.push(
    model.contrasts.length > 0
      ? { kind: "list", items: model.contrasts.map((verdict) => [`Contrast read from the question: ${verdict.contrast.text}`]) }
      : {
          kind: "paragraph",
          runs: ["The question names no direction to test against the baseline, so it is answered by the best configuration measured and its comparisons."],
        },
  );
  return { id: "question", title: "1. Question", blocks };
}

function methodSection(inputs: WriteupInputs): WriteupSection {
  const { topic, history, model } = inputs;
  const knobs = Object.entries(topic.knobs).map(([name, values]): WriteupRun[] => [
    `${name}: ${values.map(String).join(", ")} (baseline ${String(values[0])})`,
  ]);
  const stages = history.map((record): WriteupRun[] => [
    `Stage ${record.plan.stage} (${record.plan.kind}): ${record.plan.configurations.length} configuration(s), ${record.plan.experiments.length} run(s); ${record.plan.rationale.replace(/[.\s]+$/, "")}.`,
  ]);
  const base = topic.base;
  return {
    id: "method",
    title: "2. Method",
    blocks: [
      {
        kind: "paragraph",
        runs: [
          base
            ? `Each configuration changes the base experiment (${base.mode} mode, config ${base.config ?? "none"}, fixed overrides ${JSON.stringify(base.overrides)}) in the knobs below, one factor at a time from the baseline, and is run with seeds 1 to ${topic.seeds} at first; later stages add seeds or values as the planner decided.`
            : "The topic names no base experiment.",
        ],
      },
      { kind: "list", items: knobs },
      { kind: "paragraph", runs: [model.method] },
      { kind: "list", items: stages },
    ],
  };
}

function resultsSection(inputs: WriteupInputs): WriteupSection {
  const { model } = inputs;
  const byConfiguration = (id: string) => model.experiments.filter((row) => row.configurationId === id);
  const configurationRows = model.configurations.map((row): WriteupRun[][] => [
    [row.isBest ? { strong: row.id } : row.id],
    [row.settings],
    [String(row.n)],
    [row.mean === undefined ? "n/a" : toConfiguration(row.id, formatNumber(row.mean))],
    [row.low === undefined ? "n/a" : toConfiguration(row.id, `[${formatNumber(row.low)}, ${formatNumber(row.high)}]`)],
    scoreLinks(byConfiguration(row.id)),
  ]);
  const comparisonRows = (model.comparisons?.rows ?? []).map((row): WriteupRun[][] => [
    [toConfiguration(row.otherId, row.otherId)],
    [toConfiguration(row.otherId, formatNumber(row.advantage))],
    [row.low === undefined ? "n/a" : toConfiguration(row.otherId, `[${formatNumber(row.low)}, ${formatNumber(row.high)}] (${levelText(row.level)})`)],
    [testText(row)],
    [row.pHolm === undefined ? "n/a" : toConfiguration(row.otherId, formatNumber(row.pHolm))],
    [verdictWords[row.verdict]],
  ]);
  const blocks: WriteupBlock[] = [
    {
      kind: "paragraph",
      runs: [
        `Per configuration: ${model.metric?.label ?? "score"}, mean over seeds with its 95% t interval; each number links to the runs it is computed from.`,
      ],
    },
    { kind: "table", header: ["configuration", "settings", "seeds scored", "mean", "95% interval", "scores (one per run)"], rows: configurationRows },
    { kind: "figures" },
  ];
  if (comparisonRows.length > 0) {
    blocks.push(
      {
        kind: "paragraph",
        runs: [
          `The best, ${model.comparisons!.incumbent}, against each other configuration, as the planner judged them at the campaign's last look (the test per row, at level ${formatNumber(model.look.level)}, Holm-adjusted; see the method):`,
        ],
      },
      { kind: "table", header: ["other", "best ahead by", "Holm-adjusted interval (level)", "test (df)", "Holm p", "verdict"], rows: comparisonRows },
    );
  }
  blocks.push(runsTable(model.configurations, byConfiguration));
  return { id: "results", title: "3. Results", blocks };
}

function scoreLinks(rows: ExperimentRow[]): WriteupRun[] {
  const scored = rows.filter((row) => row.score !== undefined);
  if (scored.length === 0) return ["none"];
  return scored.flatMap((row, index): WriteupRun[] => [
    ...(index === 0 ? [] : [", "]),
    row.link ? { text: formatNumber(row.score), href: row.link } : formatNumber(row.score),
  ]);
}

/** The runs of each configuration, one row each with its anchor: where every number above leads. */
function runsTable(configurations: ConfigurationRow[], byConfiguration: (id: string) => ExperimentRow[]): WriteupBlock {
  const rows = configurations.map((row): WriteupRun[][] => [
    [row.id],
    byConfiguration(row.id).flatMap((run, index): WriteupRun[] => [
      ...(index === 0 ? [] : ["; "]),
      run.link ? { text: run.blueprintId, href: run.link } : run.blueprintId,
      ` (seed ${run.seed}, ${run.state}${run.score === undefined ? "" : `, score ${formatNumber(run.score)}`})`,
    ]),
  ]);
  return {
    kind: "table",
    header: ["configuration", "its runs (each links to the run's result directory)"],
    rows,
    anchors: configurations.map((row) => configurationAnchor(row.id)),
  };
}

function decidedSection(inputs: WriteupInputs): WriteupSection {
  const { model } = inputs;
  const equivalence = model.metric?.equivalence;
  const decided: WriteupRun[][] = model.contrasts.filter((verdict) => verdict.answer !== "not decided").map((verdict) => contrastRuns(verdict, equivalence));
  const open: WriteupRun[][] = model.contrasts.filter((verdict) => verdict.answer === "not decided").map((verdict) => contrastRuns(verdict, equivalence));
  for (const row of model.comparisons?.rows ?? []) {
    const line: WriteupRun[] = [
      toConfiguration(model.comparisons!.incumbent, model.comparisons!.incumbent),
      " against ",
      toConfiguration(row.otherId, row.otherId),
      ": ",
    ];
    if (row.verdict === "worse") decided.push([...line, "better beyond seed noise (Holm p ", toConfiguration(row.otherId, formatNumber(row.pHolm)), ")."]);
    else if (row.verdict === "equivalent") decided.push([...line, `the same within the margin ${formatNumber(equivalence)}.`]);
    else open.push([...line, row.verdict === "open" ? "within seed noise." : "too few seeds to compare."]);
  }
  const settle = model.answer
    .map((paragraph) => paragraph.map((run) => (typeof run === "string" ? run : run.strong)).join(""))
    .filter((text) => text.startsWith("What would settle it"));
  const blocks: WriteupBlock[] = [
    {
      kind: "paragraph",
      runs: [`Decided (at the level ${formatNumber(model.look.level)} of the campaign's last look, look ${model.look.look}, Holm-corrected):`],
    },
    decided.length > 0 ? { kind: "list", items: decided } : { kind: "paragraph", runs: ["Nothing."] },
    { kind: "paragraph", runs: ["Not decided:"] },
    open.length > 0 ? { kind: "list", items: open } : { kind: "paragraph", runs: ["Nothing: every comparison made is settled."] },
  ];
  for (const text of settle) blocks.push({ kind: "paragraph", runs: [text] });
  return { id: "decided", title: "4. What was decided and what was not", blocks };
}

function threatsSection(inputs: WriteupInputs): WriteupSection {
  const { model, topic, history } = inputs;
  const seeds = model.configurations.filter((row) => row.n > 0).map((row) => row.n);
  const threats: WriteupRun[][] = [
    [
      `Seed noise: ${seeds.length === 0 ? "no configuration was scored" : `${Math.min(...seeds)} to ${Math.max(...seeds)} scored seed(s) per configuration`}; with few seeds only large differences separate, and the seed noise is itself estimated from those seeds.`,
    ],
    [
      "Multiple comparisons: every verdict is Holm-corrected within its family, and every interval shown is adjusted to agree with it; a different family (more configurations) would widen them.",
    ],
  ];
  threats.push(
    [measurementLine(topic)],
    [
      `Scope: the answer holds for the values tried (${
        Object.entries(topic.knobs)
          .map(([name, values]) => `${name} ${values.map(String).join("/")}`)
          .join("; ") || "none"
      }) on this base experiment and its task only.`,
    ],
    [
      topic.reproducibility ??
        "Reproducibility: a run repeated with the same seed gives the same curve only on a deterministic engine; elsewhere the seeds' spread is the noise estimate.",
    ],
  );
  const refused = refusedText(history);
  if (refused) threats.push([refused]);
  for (const caveat of model.caveats) threats.push([caveat]);
  return { id: "threats", title: "5. Threats to validity", blocks: [{ kind: "list", items: threats }] };
}
