import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isA3rError } from "../../core/errors.ts";
import { heuristicNeeds, loadTopic, parseTopic } from "./topic.ts";

const good = `---
title: Learning rate
metric: { name: reward_mean, goal: maximize }
base: { codebase: /code, interpreter: /usr/bin/python, config: /code/c.yaml, command: "python train.py", time_budget: 30m }
knobs:
  lr: [0.1, 0.01]
  batch: [8, 16, 32]
seeds: 3
budgets: { stages: 2, experiments: 20, gpu_hours: 5, wall_time: 2h, llm_tokens: 2000000, llm_usd: 12.5 }
---
Which learning rate is best?
`;

function refusal(text: string): { message: string; hint: string | undefined } {
  try {
    parseTopic(text, { file: "t.md", baseDir: "/topics" });
  } catch (error) {
    if (isA3rError(error, "TOPIC_INVALID")) return { message: error.message, hint: error.hint };
    throw error;
  }
  throw new Error("the topic was accepted");
}

describe("parseTopic", () => {
  it("reads every field of a full topic, with defaults and knob order kept", () => {
    const topic = parseTopic(good, { file: "/topics/t.md" });
    expect(topic.title).toBe("Learning rate");
    expect(topic.question).toBe("Which learning rate is best?");
    expect(topic.metric).toEqual({ name: "reward_mean", goal: "maximize", score: "final" });
    expect(topic.base?.mode).toBe("classic");
    expect(topic.base?.seed_key).toBe("seed");
    expect(Object.keys(topic.knobs)).toEqual(["lr", "batch"]);
    expect(topic.knobs.batch).toEqual([8, 16, 32]);
    expect(topic.seeds).toBe(3);
    expect(topic.budgets).toEqual({ stages: 2, experiments: 20, gpuHours: 5, wallTimeMs: 2 * 3600_000, llmTokens: 2_000_000, llmUsd: 12.5 });
    expect(topic.review).toBe(false);
    expect(heuristicNeeds(topic)).toEqual([]);
  });

  it("accepts a plain sentence and lists what the heuristic planner needs", () => {
    const topic = parseTopic("Does a smaller learning rate help GRPO on math?\n");
    expect(topic.title).toBe("Does a smaller learning rate help GRPO on math?");
    expect(topic.metric).toBeUndefined();
    const needs = heuristicNeeds(topic);
    expect(needs).toHaveLength(3);
    expect(needs.join(" ")).toMatch(/metric:/);
    expect(needs.join(" ")).toMatch(/knobs:/);
  });

  it("refuses a front matter without metric, naming the field and what to add", () => {
    const { message, hint } = refusal("---\ntitle: x\nknobs: { lr: [1] }\n---\nq\n");
    expect(message).toMatch(/t\.md:\d+: metric is missing/);
    expect(hint).toMatch(/metric: \{ name:/);
  });

  it("refuses a knob without values, pointing at its line", () => {
    const { message, hint } = refusal("---\nmetric: { name: m, goal: maximize }\nknobs:\n  lr: []\n---\nq\n");
    expect(message).toMatch(/t\.md:4: knobs\.lr: at least one value/);
    expect(hint).toMatch(/candidate values/);
  });

  it("refuses relative base paths, unknown fields and bad durations", () => {
    expect(refusal("---\nmetric: { name: m, goal: maximize }\nbase: { codebase: code, interpreter: /n, command: x }\n---\nq").message).toMatch(
      /base\.codebase: an absolute path/,
    );
    expect(refusal("---\nmetric: { name: m, goal: maximize }\nknob: { lr: [1] }\n---\nq").message).toMatch(/knob/);
    expect(refusal("---\nmetric: { name: m, goal: maximize }\nbudgets: { wall_time: soon }\n---\nq").message).toMatch(/budgets\.wall_time: a duration/);
  });

  it("leaves the language-model budgets unset when the topic gives none", () => {
    const topic = parseTopic("---\nmetric: { name: m, goal: maximize }\nbudgets: { stages: 2 }\n---\nq");
    expect(topic.budgets.llmTokens).toBeUndefined();
    expect(topic.budgets.llmUsd).toBeUndefined();
    expect(parseTopic("A plain question?").budgets).toMatchObject({ llmTokens: undefined, llmUsd: undefined });
  });

  it("refuses a language-model budget that is not a positive number, naming the line, the field and the fix", () => {
    const topicWith = (budgets: string) => `---\nmetric: { name: m, goal: maximize }\nbudgets:\n  stages: 2\n${budgets}\n---\nq`;
    for (const bad of ["  llm_tokens: lots", "  llm_tokens: 0", "  llm_tokens: -5", "  llm_tokens: 1.5"]) {
      const { message, hint } = refusal(topicWith(bad));
      expect(message, bad).toMatch(/^t\.md:5: budgets\.llm_tokens: a positive whole number of tokens such as 2000000$/);
      expect(hint, bad).toMatch(/`budgets: \{ llm_tokens: 2000000 \}`/);
    }
    for (const bad of ["  llm_usd: free", "  llm_usd: 0", "  llm_usd: -1", "  llm_usd: .inf"]) {
      const { message, hint } = refusal(topicWith(bad));
      expect(message, bad).toMatch(/^t\.md:5: budgets\.llm_usd: a positive amount of US dollars such as 20$/);
      expect(hint, bad).toMatch(/`budgets: \{ llm_usd: 20 \}`/);
    }
    expect(refusal(topicWith("  llm_dollars: 5")).message).toMatch(/llm_dollars/);
  });

  it("reads the campaign's command policy, and refuses a pattern that does not compile or a rule that redefines a default", () => {
    const topicWith = (commands: string) => `---\nmetric: { name: m, goal: maximize }\ncommands:\n${commands}\n---\nq`;
    const topic = parseTopic(
      topicWith(
        '  allow: ["python3 train\\\\.py( --[\\\\w.=/:-]+)*"]\n  rules: [{ id: no-git-push, pattern: "git\\\\s+push", reason: runs must not publish, severity: error }]',
      ),
      { file: "t.md" },
    );
    expect(topic.commands.allow).toEqual(["python3 train\\.py( --[\\w.=/:-]+)*"]);
    expect(topic.commands.rules.map((rule) => rule.id)).toEqual(["no-git-push"]);
    expect(parseTopic(good).commands).toEqual({ allow: [], rules: [] });
    const badPattern = refusal(topicWith('  allow: ["python ("]'));
    expect(badPattern.message).toMatch(/^t\.md:4: commands\.allow\.0: a regular expression \(JavaScript syntax, no backreferences or lookarounds/);
    expect(badPattern.hint).toMatch(/commands: \{ allow:/);
    expect(refusal(topicWith('  rules: [{ id: sudo, pattern: "x", reason: y, severity: warning }]')).message).toMatch(
      /^t\.md:\d+: commands\.rules: command policy extension redefines rule "sudo"/,
    );
    // A pattern that compiles only without its flags would throw in every audit: refused here.
    expect(refusal(topicWith('  rules: [{ id: dash, pattern: "a\\\\-b", flags: u, reason: y, severity: error }]')).message).toMatch(
      /commands\.rules\.0\.pattern: a valid JavaScript regular expression source with the flags "u"/,
    );
    const many = Array.from({ length: 65 }, (_, index) => `"python3 train${index}\\\\.py"`).join(", ");
    expect(refusal(topicWith(`  allow: [${many}]`)).message).toMatch(/commands\.allow: at most 64 allow patterns/);
    const smuggled = `---\nmetric: { name: m, goal: maximize }\nbase: { codebase: /c, interpreter: /usr/bin/python, command: "python t.py", blueprint: { command_rules: [] } }\n---\nq`;
    expect(refusal(smuggled).message).toMatch(/base\.blueprint\.command_rules: the campaign's command rules belong under commands\.rules/);
  });

  it("refuses an empty topic and JavaScript front matter", () => {
    expect(refusal("  \n").message).toMatch(/empty/);
    expect(refusal("---js\n{ metric: 1 }\n---\nq").message).toMatch(/refused/);
  });
});

describe("loadTopic", () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("resolves the hosts file against the topic's folder and refuses one that does not exist", async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-topic-"));
    await writeFile(join(dir, "hosts.yaml"), "hosts: []\n");
    await writeFile(join(dir, "ok.md"), "---\nmetric: { name: m, goal: minimize }\nhosts: hosts.yaml\n---\nq\n");
    await writeFile(join(dir, "bad.md"), "---\nmetric: { name: m, goal: minimize }\nhosts: nowhere.yaml\n---\nq\n");
    expect((await loadTopic(join(dir, "ok.md"))).topic.hostsFile).toBe(join(dir, "hosts.yaml"));
    await expect(loadTopic(join(dir, "bad.md"))).rejects.toThrow(/nowhere\.yaml does not exist/);
    await expect(loadTopic(join(dir, "missing.md"))).rejects.toThrow(/no topic file/);
  });

  it("accepts the embedded swarm example topic", async () => {
    const { topic } = await loadTopic(resolve(import.meta.dirname, "../../examples/topics/embedded-lr.md"));
    expect(topic.metric?.score).toBe("area");
    expect(topic.knobs.lr).toEqual([0.2, 0.05, 0.5]);
    expect(topic.base?.overrides).toEqual({ max_steps: 20 });
    expect(heuristicNeeds(topic)).toEqual([]);
  });
});
