import { describe, expect, it } from "vitest";
import { judgeContrasts } from "./contrast-verdicts.ts";
import type { ConfigurationSummary } from "./planner.ts";
import { parseQuestion } from "./question.ts";
import { summarizeSample } from "./statistics.ts";
import type { KnobValue } from "./topic.ts";
import { contrastParagraph } from "../report/question-answer.ts";

const topic = (question: string, knobs: Record<string, KnobValue[]>) => ({ title: question.split("\n")[0]!, question, knobs });

describe("the question read as contrasts", () => {
  it("'Does a smaller learning rate help?' is smaller lr vs the baseline, asking whether it helps", () => {
    const parsed = parseQuestion(topic("Does a smaller learning rate help?", { lr: [0.2, 0.05, 0.8] }));
    expect(parsed.yesNo).toBe(true);
    expect(parsed.contrasts).toEqual([
      { knob: "lr", direction: "smaller", values: [0.05], baseline: 0.2, ask: "helps", text: "smaller lr vs the baseline lr=0.2: does it help?" },
    ]);
  });

  it("reads larger, hurt, matter, written values, and knob keys by their usual names", () => {
    expect(parseQuestion(topic("Do more rollouts per prompt hurt the reward?", { num_repeat: [4, 8, 2] })).contrasts[0]).toMatchObject({
      direction: "larger",
      values: [8],
      ask: "hurts",
    });
    expect(parseQuestion(topic("Does gradient clipping matter?", { "optimizer.clip": [1, 0.2, 0.05] })).contrasts[0]).toMatchObject({
      knob: "optimizer.clip",
      direction: "other",
      values: [0.2, 0.05],
      ask: "matters",
    });
    expect(parseQuestion(topic("Is lr 0.05 better than the default?", { lr: [0.2, 0.05, 0.8] })).contrasts[0]).toMatchObject({
      direction: "values",
      values: [0.05],
      ask: "helps",
    });
    // Two knobs, each with its own direction word beside it.
    const two = parseQuestion(topic("Does a lower temperature with a higher top-p help?", { temperature: [1, 0.7, 1.3], top_p: [0.9, 0.5, 1] }));
    expect(two.contrasts.map((contrast) => [contrast.knob, contrast.direction, contrast.values])).toEqual([
      ["temperature", "smaller", [0.7]],
      ["top_p", "larger", [1]],
    ]);
  });

  it("a one-letter knob is not found in every 'a' of the sentence", () => {
    const parsed = parseQuestion(topic("Does a larger learning rate help?", { a: [1, 2], lr: [0.2, 0.5] }));
    expect(parsed.contrasts.map((contrast) => [contrast.knob, contrast.direction])).toEqual([["lr", "larger"]]);
  });

  it("a 'which' question without a direction asks no contrast: the best configuration answers it", () => {
    expect(parseQuestion(topic("Which learning rate gives the best final reward?", { lr: [0.1, 0.01, 1] })).contrasts).toEqual([]);
    expect(parseQuestion(topic("How much does a smaller lr gain?", { lr: [0.1, 0.01, 1] })).contrasts[0]?.direction).toBe("smaller");
  });
});

const configuration = (id: string, delta: Record<string, KnobValue>, scores: number[]): ConfigurationSummary => ({
  configuration: { id, settings: { lr: 0.2, ...delta }, delta },
  scores,
  sample: summarizeSample(scores),
  failed: 0,
  stage: 1,
});

function answered(question: string, summaries: ConfigurationSummary[], equivalence?: number): string {
  const contrasts = parseQuestion(topic(question, { lr: [0.2, 0.05, 0.02, 0.8] })).contrasts;
  const verdicts = judgeContrasts(contrasts, summaries, { goal: "maximize", ...(equivalence === undefined ? {} : { equivalence }) });
  return contrastParagraph(verdicts, equivalence)
    .map((run) => (typeof run === "string" ? run : `**${run.strong}**`))
    .join("");
}

describe("the contrasts answered in words", () => {
  const baseline = configuration("baseline", {}, [0.5, 0.52, 0.51]);
  it("no: every smaller value is worse beyond seed noise, with the effect and its Holm-adjusted interval", () => {
    const text = answered("Does a smaller learning rate help?", [
      baseline,
      configuration("lr-0.05", { lr: 0.05 }, [0.3, 0.32, 0.31]),
      configuration("lr-0.02", { lr: 0.02 }, [0.2, 0.21, 0.2]),
      configuration("lr-0.8", { lr: 0.8 }, [0.9, 0.91, 0.9]),
    ]);
    expect(text).toMatch(
      /^Smaller lr vs the baseline lr=0\.2: does it help\? \*\*No\*\*: lr-0\.05 is worse than the baseline by 0\.2 in the mean \(difference -0\.2, Holm-adjusted 96\.75% interval \[-0\.2\d+, -0\.1\d+\], Holm p [0-9.e-]+, 3 and 3 seed\(s\)\), worse beyond seed noise\. Also: lr-0\.02 worse beyond seed noise/,
    );
    // The larger value (lr 0.8, the best) is not part of this contrast.
    expect(text).not.toContain("lr-0.8");
  });

  it("yes: one smaller value is better beyond seed noise", () => {
    const text = answered("Does a smaller learning rate help?", [baseline, configuration("lr-0.05", { lr: 0.05 }, [0.7, 0.71, 0.72])]);
    expect(text).toContain("**Yes**: lr-0.05 is better than the baseline by 0.2 in the mean");
  });

  it("equivalent within the margin, which answers 'no difference'", () => {
    const text = answered("Does a smaller learning rate help?", [baseline, configuration("lr-0.05", { lr: 0.05 }, [0.5, 0.515, 0.51])], 0.05);
    expect(text).toContain("**No difference: equivalent within the margin**: lr-0.05 is");
    expect(text).toContain("the same within the margin 0.05");
  });

  it("not decided: within seed noise, and how many seeds would settle it", () => {
    const text = answered("Does a smaller learning rate help?", [baseline, configuration("lr-0.05", { lr: 0.05 }, [0.45, 0.6, 0.55])]);
    expect(text).toContain("**Not decided**: lr-0.05 is better than the baseline by 0.02333 in the mean");
    expect(text).toContain("Holm-adjusted 95% interval [-0.1621, 0.2087], Holm p 0.6506, 3 and 3 seed(s)), within seed noise.");
    expect(text).toMatch(
      /What would settle it: \d+ more seed\(s\) of lr-0\.05 and \d+ of the baseline \(\d+ each\) would separate a 0\.02333 difference with 80% power\./,
    );
  });

  it("not decided with one seed a side, and when nothing on the asked side was measured", () => {
    const one = answered("Does a smaller learning rate help?", [configuration("baseline", {}, [0.5]), configuration("lr-0.05", { lr: 0.05 }, [0.6])]);
    expect(one).toContain("**Not decided**");
    expect(one).toContain("need at least two scored seeds each (now 1 and 1)");
    const none = answered("Does a smaller learning rate help?", [baseline, configuration("lr-0.8", { lr: 0.8 }, [0.9, 0.91, 0.9])]);
    expect(none).toContain("**Not decided**: no configuration on that side of the baseline was scored");
  });
});
