import type { KnobValue, Topic } from "./topic.ts";

/**
 * The topic's question read as contrasts against the baseline, deterministically from its
 * words and its knobs, so a question asked as "Does a smaller learning rate help?" is
 * answered in its own terms (yes / no / the same within the margin / not decided) and not
 * only by naming the best value. A planner may replace the contrasts with its own; this
 * reading is what a campaign without a model gets. Pure.
 *
 * What is read:
 * - whether it is a yes/no question (it opens with does, is, can, should, ...);
 * - which knobs it names, by key (`lr`, `optimizer.clip` → "clip") or by a usual name
 *   ("learning rate", "clipping", "top-p", "group size", "KL");
 * - per named knob, a direction next to it: smaller / lower / less / reducing → the values
 *   below the baseline; larger / higher / more / increasing → those above; a value of the
 *   knob written in the question → those values; else every value other than the baseline;
 * - what is asked of it: help (better for the metric's goal), hurt (worse), or matter
 *   (either way). A yes/no question that says none of these asks whether it helps when it
 *   names a direction, and whether it matters when it does not.
 */
export type ContrastAsk = "helps" | "hurts" | "matters";
export type ContrastDirection = "smaller" | "larger" | "values" | "other";

export interface Contrast {
  knob: string;
  direction: ContrastDirection;
  /** The topic's values of the knob on the contrast's side (refined values count too, by their direction). */
  values: KnobValue[];
  baseline: KnobValue;
  ask: ContrastAsk;
  /** "smaller lr vs the baseline lr=0.2: does it help?" */
  text: string;
}

export interface ParsedQuestion {
  yesNo: boolean;
  contrasts: Contrast[];
}

const yesNoOpening = /^\s*(?:#+\s*)?(?:does|do|did|is|are|was|were|can|could|will|would|should|has|have|must|may)\b/i;
const smallerWords = new Set([
  "smaller",
  "lower",
  "less",
  "lesser",
  "fewer",
  "reduce",
  "reduced",
  "reducing",
  "decrease",
  "decreased",
  "decreasing",
  "shorter",
  "tighter",
  "lowering",
  "cut",
  "cutting",
]);
const largerWords = new Set([
  "larger",
  "higher",
  "more",
  "greater",
  "bigger",
  "increase",
  "increased",
  "increasing",
  "raise",
  "raised",
  "raising",
  "longer",
  "looser",
  "wider",
]);
const helpsWords =
  /\b(?:help|helps|helped|improve|improves|improved|better|beat|beats|outperform|outperforms|faster|benefit|benefits|gain|gains|boost|boosts)\b/i;
const hurtsWords = /\b(?:hurt|hurts|harm|harms|worse|degrade|degrades|slower|damage|damages|break|breaks)\b/i;
const mattersWords = /\b(?:matter|matters|change|changes|affect|affects|effect|influence|influences|differ|differs|difference|sensitive)\b/i;

/** Usual names of common knobs, keyed by the last segment of the config key. */
const knownNames: Record<string, string[]> = {
  lr: ["learning rate", "learning-rate", "step size"],
  learning_rate: ["learning rate", "learning-rate", "lr"],
  clip: ["clipping", "clip ratio", "gradient clipping", "clip"],
  grad_clip: ["clipping", "gradient clipping", "clip"],
  clip_ratio: ["clipping", "clip ratio"],
  kl: ["kl penalty", "kl coefficient", "kl"],
  kl_coef: ["kl penalty", "kl coefficient", "kl"],
  kl_coeff: ["kl penalty", "kl coefficient", "kl"],
  temperature: ["sampling temperature", "temperature"],
  top_p: ["top-p", "top p", "nucleus sampling", "nucleus"],
  num_repeat: ["group size", "repeats", "rollouts per prompt", "samples per prompt"],
  group_size: ["group size"],
  train_batch_size: ["batch size", "batch"],
  batch_size: ["batch size", "batch"],
};

export function parseQuestion(topic: Pick<Topic, "question" | "title" | "knobs">): ParsedQuestion {
  const sentence = questionSentence(topic.question) ?? topic.title;
  const yesNo = yesNoOpening.test(sentence) || yesNoOpening.test(topic.title);
  const words = tokens(sentence);
  const knobNames = Object.keys(topic.knobs);
  let named = knobNames.filter((knob) => mentionAt(words, knob) !== undefined);
  // A question about the one knob of the topic need not name it; a yes/no question that names none asks of each.
  if (named.length === 0 && (knobNames.length === 1 || yesNo)) named = knobNames;
  const ask = askOf(sentence);
  const contrasts: Contrast[] = [];
  for (const knob of named) {
    const values = topic.knobs[knob]!;
    const baseline = values[0]!;
    const others = values.slice(1);
    if (others.length === 0) continue;
    const side = directionOf(words, knob, sentence, others, baseline);
    // Only a yes/no question, or one that names a direction, asks a contrast; "which lr is best" does not.
    if (!yesNo && side.direction === "other") continue;
    const chosenAsk = ask ?? (side.direction === "other" ? "matters" : "helps");
    contrasts.push({ knob, ...side, baseline, ask: chosenAsk, text: contrastText(knob, side, baseline, chosenAsk) });
  }
  return { yesNo, contrasts };
}

/** The first sentence that ends in "?", else the first line. */
function questionSentence(question: string): string | undefined {
  // A sentence ends at ".", "!" or "?" before a space, or at a line break; "0.05" is no end.
  const sentences = question.split(/(?<=[.!?])\s+|\n+/).map((sentence) => sentence.trim());
  return sentences.find((sentence) => sentence.endsWith("?")) ?? sentences.find((sentence) => sentence !== "");
}

interface Token {
  word: string;
  index: number;
}

function tokens(text: string): Token[] {
  return [...text.toLowerCase().matchAll(/[a-z0-9_.+-]+/g)].map((match, index) => ({ word: match[0].replace(/^[.+-]+|[.+-]+$/g, ""), index }));
}

function namesOf(knob: string): string[][] {
  const last = knob.split(".").at(-1)!.toLowerCase();
  const names = new Set([knob.toLowerCase(), last, last.replaceAll("_", " "), last.replaceAll("_", "-"), ...(knownNames[last] ?? [])]);
  // A one-letter key (`n`, `k`) would match any "a" or "n" of the sentence: only its usual names count.
  return [...names].filter((name) => name.length >= 2).map((name) => name.split(/\s+/));
}

/** The index of the first word of the knob's first mention, if any. */
function mentionAt(words: Token[], knob: string): number | undefined {
  for (const name of namesOf(knob)) {
    for (let start = 0; start + name.length <= words.length; start += 1) {
      if (name.every((part, offset) => words[start + offset]!.word === part)) return start;
    }
  }
  return undefined;
}

function askOf(sentence: string): ContrastAsk | undefined {
  if (helpsWords.test(sentence)) return "helps";
  if (hurtsWords.test(sentence)) return "hurts";
  if (mattersWords.test(sentence)) return "matters";
  return undefined;
}

function directionOf(
  words: Token[],
  knob: string,
  sentence: string,
  others: KnobValue[],
  baseline: KnobValue,
): { direction: ContrastDirection; values: KnobValue[] } {
  const written = others.filter((value) => typeof value === "number" && new RegExp(`(?<![\\d.])${escapeRegExp(String(value))}(?![\\d.])`).test(sentence));
  if (written.length > 0) return { direction: "values", values: written };
  if (typeof baseline === "number") {
    const at = mentionAt(words, knob);
    // A direction word within three words of the mention, the nearest first; else one anywhere, if the question has only one kind.
    const near =
      at === undefined ? [] : words.filter((token) => Math.abs(token.index - at) <= 3).sort((a, b) => Math.abs(a.index - at) - Math.abs(b.index - at));
    const kind = (list: Token[]): "smaller" | "larger" | undefined => {
      for (const token of list) {
        if (smallerWords.has(token.word)) return "smaller";
        if (largerWords.has(token.word)) return "larger";
      }
      return undefined;
    };
    const everywhere = new Set(words.flatMap((token) => (smallerWords.has(token.word) ? ["smaller"] : largerWords.has(token.word) ? ["larger"] : [])));
    const direction = kind(near) ?? (everywhere.size === 1 ? ([...everywhere][0] as "smaller" | "larger") : undefined);
    if (direction) {
      const values = others.filter((value) => typeof value === "number" && (direction === "smaller" ? value < baseline : value > baseline));
      return { direction, values };
    }
  }
  return { direction: "other", values: others };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function contrastText(knob: string, side: { direction: ContrastDirection; values: KnobValue[] }, baseline: KnobValue, ask: ContrastAsk): string {
  const what =
    side.direction === "smaller"
      ? `smaller ${knob}`
      : side.direction === "larger"
        ? `larger ${knob}`
        : side.direction === "values"
          ? side.values.map((value) => `${knob}=${String(value)}`).join(" or ")
          : `another ${knob}`;
  const question = ask === "helps" ? "does it help?" : ask === "hurts" ? "does it hurt?" : "does it matter?";
  return `${what} vs the baseline ${knob}=${String(baseline)}: ${question}`;
}

/** Whether a measured value of the knob lies on the contrast's side of the baseline. */
export function onContrastSide(contrast: Contrast, value: KnobValue): boolean {
  if (value === contrast.baseline) return false;
  switch (contrast.direction) {
    case "smaller":
      return typeof value === "number" && typeof contrast.baseline === "number" && value < contrast.baseline;
    case "larger":
      return typeof value === "number" && typeof contrast.baseline === "number" && value > contrast.baseline;
    case "values":
      return contrast.values.includes(value);
    case "other":
      return true;
  }
}
