import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { campaignPaths } from "../../campaign/index.ts";
import { fixtureTopicText } from "../../test-support/fixture-topic.ts";
import { auditBlueprintTexts, checkStageBudgets, commandsAddedBy, reviewWaitMs } from "./graph-steps.ts";
import { memoAnswer } from "../record/stored-answers.ts";
import { planNext } from "../planners/heuristic/heuristic-planner.ts";
import type { StagePlan } from "../domain/planner.ts";
import { parseTopic } from "../domain/topic.ts";
import { draftStageBlueprints } from "../design/write-blueprints.ts";

const topic = parseTopic(fixtureTopicText({ stages: 2 }));
const paths = campaignPaths("/tmp/a3r-graph-steps", "steps");
const plan = (() => {
  const step = planNext({ topic, history: [], usage: { gpuHours: 0, wallTimeMs: 0 } });
  if (step.kind !== "stage") throw new Error(step.explanation);
  return step.plan;
})();
const drafts = draftStageBlueprints(topic, plan, paths);

describe("auditing blueprint texts before they are written", () => {
  it("passes the graph's own drafts", () => {
    expect(auditBlueprintTexts(paths, 1, drafts, drafts)).toEqual([]);
  });

  it("finds a relative path, a forbidden command, a moved result directory, a wrong id and a missing experiment", () => {
    const [first, second] = drafts;
    const broken = [
      {
        blueprintId: first!.blueprintId,
        text: first!.text.replace(/## Codebase\n\n\S+/, "## Codebase\n\ncode/here").replace("node trainer.mjs", "rm -rf / && node trainer.mjs"),
      },
      { blueprintId: second!.blueprintId, text: second!.text.replaceAll(paths.result(second!.blueprintId), paths.result(first!.blueprintId)) },
      { blueprintId: "s1-extra-seed1", text: first!.text },
    ];
    const messages = auditBlueprintTexts(paths, 1, broken, drafts).map((finding) => `${finding.blueprintId}: ${finding.message}`);
    expect(messages.some((text) => text.startsWith(`${first!.blueprintId}:`) && /absolute/i.test(text))).toBe(true);
    expect(messages.some((text) => text.startsWith(`${first!.blueprintId}:`) && /rule rm-recursive-root/.test(text))).toBe(true);
    expect(messages).toContain(
      `${second!.blueprintId}: result directory must be ${paths.result(second!.blueprintId)}, not ${paths.result(first!.blueprintId)}`,
    );
    expect(messages.some((text) => text.startsWith("s1-extra-seed1: s1-extra-seed1 is not an experiment of stage 1"))).toBe(true);
  });

  it("refuses changes to what runs and what it costs, and lets purpose, command and notes change", () => {
    const [first] = drafts;
    const costly = first!.text
      .replace("gpus: 0", "gpus: 8")
      .replace(/## Time Budget\n\n2m/, "## Time Budget\n\n300h")
      .replace("lr: 0.1", "lr: 0.01");
    const messages = auditBlueprintTexts(paths, 1, [{ blueprintId: first!.blueprintId, text: costly }, ...drafts.slice(1)], drafts).map(
      (finding) => finding.message,
    );
    expect(messages).toContain("front matter gpus must stay 0 as planned, not 8");
    expect(messages).toContain('timeBudget must stay "2m" as planned, not "300h" (a planner may change only the purpose, the command and the notes)');
    expect(messages.some((text) => text.startsWith("front matter overrides must stay"))).toBe(true);
    const allowed = first!.text
      .replace("node trainer.mjs", "echo start && node trainer.mjs")
      .replace("- Written by the a3r leader", "- Checked by the planner. Written by the a3r leader");
    expect(auditBlueprintTexts(paths, 1, [{ blueprintId: first!.blueprintId, text: allowed }, ...drafts.slice(1)], drafts)).toEqual([]);
  });
});

describe("commands a planner added", () => {
  it("lists command lines the drafts do not have, once each", () => {
    expect(commandsAddedBy(drafts, drafts)).toEqual([]);
    const changed = drafts.map((draft) => ({ ...draft, text: draft.text.replace("node trainer.mjs", "pip install torch==2.4\nnode trainer.mjs") }));
    expect(commandsAddedBy(drafts, changed)).toEqual(["pip install torch==2.4"]);
  });

  it("leaves out lines a pattern of the topic's commands.allow matches whole", () => {
    const changed = drafts.map((draft) => ({
      ...draft,
      text: draft.text.replace("node trainer.mjs", "pip install torch==2.4\npip install torch==2.4 && curl x\nnode trainer.mjs"),
    }));
    expect(commandsAddedBy(drafts, changed, ["pip install torch==[\\d.]+"])).toEqual(["pip install torch==2.4 && curl x"]);
  });

  it("lets an allow pattern through only a plain command, however permissive the pattern", () => {
    const lines = [
      "python3 run.py --x 1 --out=/tmp/a:b",
      "python3 run.py --x;git${IFS}push",
      "python3 run.py --x=$(cat${IFS}secret)",
      "python3 run.py `id`",
      "python3 run.py --x>~/.bashrc",
      "python3 run.py --x\\",
      'python3 run.py --tag="',
      '#"; git push; python3 run.py --tag="',
      `python3 run.py ${"--x ".repeat(200)}`,
    ];
    const changed = drafts.map((draft) => ({ ...draft, text: draft.text.replace("node trainer.mjs", `${lines.join("\n")}\nnode trainer.mjs`) }));
    expect(commandsAddedBy(drafts, changed, ["python3 .*", "\\S+( \\S+)*"])).toEqual(lines.slice(1).map((line) => line.trim()));
  });
});

describe("the budget gate", () => {
  const usage = { gpuHours: 0, wallTimeMs: 0 };
  it("lets a stage through that fits, and refuses stages, experiments, GPU-hours and wall time beyond the budgets", () => {
    expect(checkStageBudgets(topic, plan, [], usage)).toBeNull();
    const third: StagePlan = { ...plan, stage: 3 };
    expect(checkStageBudgets(topic, third, [], usage)?.explanation).toBe("stage 3 would exceed the budget of 2 stage(s)");
    const few = { ...topic, budgets: { ...topic.budgets, experiments: 1 } };
    expect(checkStageBudgets(few, plan, [], usage)?.explanation).toBe("stage 1 needs 2 experiments but only 1 of the budget of 1 remain");
    const gpu = { ...topic, base: { ...topic.base!, gpus: 1 }, budgets: { ...topic.budgets, gpuHours: 0.05 } };
    expect(checkStageBudgets(gpu, plan, [], usage)?.explanation).toMatch(/^stage 1 could use 0\.06667 GPU-hours \(its time budgets\), over the 0\.05 left$/);
    const wall = { ...topic, budgets: { ...topic.budgets, wallTimeMs: 3 * 60_000 } };
    expect(checkStageBudgets(wall, plan, [], { gpuHours: 0, wallTimeMs: 2 * 60_000 })?.explanation).toMatch(
      /^stage 1 could take 2m, over the wall time left \(1 min\)$/,
    );
  });
});

describe("time spent waiting for reviewers", () => {
  it("sums each answered review from its request to its answer, and ignores an open one", () => {
    const at = (minute: number) => `2026-11-29T12:${String(minute).padStart(2, "0")}:00.000Z`;
    const events = [
      { kind: "review.requested", time: at(0), stage: 1, at: "plan", round: 0 },
      { kind: "review.instructed", time: at(10), stage: 1, at: "plan", round: 0 },
      { kind: "review.requested", time: at(11), stage: 1, at: "plan", round: 1 },
      { kind: "review.approved", time: at(14), stage: 1, at: "plan", round: 1 },
      { kind: "run.dispatched", time: at(15) },
      { kind: "review.requested", time: at(30), stage: 2, at: "plan", round: 1 },
    ];
    expect(reviewWaitMs(events)).toBe(13 * 60_000);
  });
});

describe("memoized planner answers", () => {
  it("computes once and returns the stored answer afterwards", async () => {
    const dir = await mkdtemp(join(tmpdir(), "a3r-memo-"));
    try {
      const at = campaignPaths(dir, "memo");
      let calls = 0;
      const compute = async () => ({ answer: ++calls });
      expect(await memoAnswer(at, "plan-1-r0", compute)).toEqual({ answer: 1 });
      expect(await memoAnswer(at, "plan-1-r0", compute)).toEqual({ answer: 1 });
      expect(await memoAnswer(at, "plan-1-r1", compute)).toEqual({ answer: 2 });
      expect((await readdir(join(at.root, "leader-answers"))).sort()).toEqual(["plan-1-r0.json", "plan-1-r1.json"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
