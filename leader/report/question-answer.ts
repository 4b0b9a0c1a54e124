import { formatNumber } from "../domain/configurations.ts";
import type { ContrastMember, ContrastVerdict } from "../domain/contrast-verdicts.ts";
import { pairedSeedsToAdd } from "../domain/follow-up.ts";
import type { Paragraph } from "./inline.ts";

/**
 * The question's own contrasts answered in words (leader/domain/question.ts,
 * contrast-verdicts.ts): "smaller lr vs the baseline lr=0.2: does it help? No: lr-0.05 is
 * worse than the baseline by 0.12 (difference −0.12, Holm-adjusted 98.33% interval [−0.2,
 * −0.04], Holm p 0.003; 3 and 3 seed(s))". Each says yes, no, the same within the margin,
 * or not decided with the seeds that would settle it. The figures are the planner's test at
 * the campaign's last look (report-statistics.ts); a paired one says on how many seeds. Pure.
 */
const answerWords: Record<ContrastVerdict["answer"], string> = {
  yes: "Yes",
  no: "No",
  equivalent: "No difference: equivalent within the margin",
  "not decided": "Not decided",
};

export function levelText(level: number): string {
  return `${formatNumber(level * 100)}%`;
}

export function contrastParagraph(verdicts: readonly ContrastVerdict[], equivalence: number | undefined): Paragraph {
  const paragraph: Paragraph = [];
  verdicts.forEach((verdict, index) => {
    const text = verdict.contrast.text;
    paragraph.push(
      index === 0 ? "" : " ",
      `${text.charAt(0).toUpperCase()}${text.slice(1)} `,
      { strong: answerWords[verdict.answer] },
      `: ${contrastSentence(verdict, equivalence)}`,
    );
  });
  return paragraph.filter((run) => run !== "");
}

function contrastSentence(verdict: ContrastVerdict, equivalence: number | undefined): string {
  const lead = verdict.lead;
  if (verdict.baselineId === undefined) return "the baseline has no scored run, so nothing can be compared with it; run the baseline.";
  if (!lead) return `no configuration on that side of the baseline was scored; add the knob's values there (${verdict.contrast.knob} in the topic's knobs).`;
  const sentences = [memberSentence(lead, verdict, equivalence)];
  const rest = verdict.members.filter((member) => member !== lead);
  if (rest.length > 0)
    sentences.push(`Also: ${rest.map((member) => `${member.configurationId} ${verdictWords(member, equivalence)} (${figures(member, verdict)})`).join("; ")}.`);
  if (verdict.answer === "not decided") sentences.push(settleSentence(verdict));
  return sentences.join(" ");
}

function memberSentence(member: ContrastMember, verdict: ContrastVerdict, equivalence: number | undefined): string {
  const relation = member.advantage >= 0 ? "better" : "worse";
  return `${member.configurationId} is ${relation} than the baseline by ${formatNumber(Math.abs(member.advantage))} in the mean (${figures(member, verdict)}), ${verdictWords(member, equivalence)}.`;
}

function figures(member: ContrastMember, verdict: ContrastVerdict): string {
  const parts = [`difference ${formatNumber(member.difference)}`];
  if (member.low !== undefined) parts.push(`Holm-adjusted ${levelText(member.level)} interval [${formatNumber(member.low)}, ${formatNumber(member.high)}]`);
  if (member.pHolm !== undefined) parts.push(`Holm p ${formatNumber(member.pHolm)}`);
  parts.push(`${member.n} and ${verdict.baselineN} seed(s)${member.matched?.paired ? `, paired on ${member.matched.seeds}` : ""}`);
  return parts.join(", ");
}

function verdictWords(member: ContrastMember, equivalence: number | undefined): string {
  switch (member.verdict) {
    case "better":
      return "better beyond seed noise";
    case "worse":
      return "worse beyond seed noise";
    case "equivalent":
      return `the same within the margin ${formatNumber(equivalence)}`;
    case "open":
      return "within seed noise";
    case "undecidable":
      return "with too few seeds to compare (fewer than two scored on a side)";
  }
}

function settleSentence(verdict: ContrastVerdict): string {
  const open = verdict.members.filter((member) => member.verdict === "open" || member.verdict === "undecidable");
  if (open.length === 0) return "What would settle it: values on both sides of the question were not all measured.";
  const parts = open.map((member) => {
    if (member.verdict === "undecidable" || member.settle === undefined)
      return `${member.configurationId} and the baseline need at least two scored seeds each (now ${member.n} and ${verdict.baselineN}) before a count can be given`;
    if (!Number.isFinite(member.settle.seedsPerSide))
      return `no number of seeds would settle ${member.configurationId} against the baseline: their means are equal; declare \`metric.equivalence\` so that a tie can be shown`;
    const what =
      member.settle.kind === "separate" ? `separate a ${formatNumber(Math.abs(member.difference))} difference` : "show them the same within the margin";
    if (member.matched) {
      const add = pairedSeedsToAdd(member.settle.seedsPerSide, member.matched.seeds);
      return `${add} more seed(s) run on both ${member.configurationId} and the baseline (${member.matched.seeds + add} shared seeds, compared paired) would ${what} with 80% power`;
    }
    const more = (n: number): number => Math.max(0, member.settle!.seedsPerSide - n);
    return `${more(member.n)} more seed(s) of ${member.configurationId} and ${more(verdict.baselineN)} of the baseline (${member.settle.seedsPerSide} each) would ${what} with 80% power`;
  });
  return `What would settle it: ${parts.join("; ")}.`;
}
