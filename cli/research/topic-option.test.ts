import { describe, expect, it } from "vitest";
import { adjustTopicText, campaignIdFor, demoCampaignId, hasFrontMatter, liftTopicSecrets, missingSecretReferences } from "./topic-option.ts";
import { parseTopic } from "../../leader/domain/topic.ts";

const topic = `---
title: Which lr? (v2)
metric: { name: reward, goal: maximize }
# the budgets a person chose
budgets: { stages: 3, experiments: 24 }
hosts: ../hosts/local-only.yaml
---
# Which lr?

Body text stays as it is.
`;

describe("adjustTopicText", () => {
  it("overrides budgets and makes the hosts path absolute, keeping comments and the body", () => {
    const text = adjustTopicText(topic, { stages: 1, experiments: 4, hostsFile: "/abs/hosts.yaml" });
    const parsed = parseTopic(text, { file: "/topics/t.md" });
    expect(parsed.budgets.stages).toBe(1);
    expect(parsed.budgets.experiments).toBe(4);
    expect(parsed.hostsFile).toBe("/abs/hosts.yaml");
    expect(text).toContain("# the budgets a person chose");
    expect(text.endsWith("# Which lr?\n\nBody text stays as it is.\n")).toBe(true);
  });

  it("removes hosts with null and leaves unspecified fields alone", () => {
    const parsed = parseTopic(adjustTopicText(topic, { hostsFile: null }), { file: "/topics/t.md" });
    expect(parsed.hostsFile).toBeUndefined();
    expect(parsed.budgets).toMatchObject({ stages: 3, experiments: 24 });
  });

  it("adds a budgets map when the topic has none", () => {
    const text = adjustTopicText("---\nmetric: { name: r, goal: minimize }\n---\nQ?\n", { experiments: 7 });
    expect(parseTopic(text).budgets).toMatchObject({ stages: 3, experiments: 7 });
  });

  it("returns a plain-sentence topic unchanged", () => {
    expect(adjustTopicText("Does lr matter?\n", { stages: 1 })).toBe("Does lr matter?\n");
    expect(hasFrontMatter("Does lr matter?\n")).toBe(false);
    expect(hasFrontMatter(topic)).toBe(true);
  });
});

describe("campaign ids", () => {
  it("come from the title, else the file name", () => {
    expect(campaignIdFor(parseTopic(topic), "/x/y.md")).toBe("which-lr-v2");
    expect(campaignIdFor(parseTopic("!!!\n"), "/x/My Topic.md")).toBe("my-topic");
  });

  it("of demos carry the time and are valid folder names", () => {
    expect(demoCampaignId(new Date("2026-11-29T11:42:03.500Z"))).toBe("demo-20261129-114203");
  });
});

describe("liftTopicSecrets", () => {
  const secretTopic = [
    "---",
    "title: Does lr matter? key sk-ant-api03-Qz8WxTk3Lm9Rv2Bn7Yc4",
    "metric: { name: reward, goal: maximize }",
    "base: { codebase: /c, interpreter: /usr/bin/node, command: node t.js --api-key sk-proj-Rk3Tz8Wq1Yx6Lm2Np9Vb4 --lr 0.1 }",
    "---",
    "Does it? The cache is redis://:Gh4Lp9Xs3Vb7@cache:6379",
    "",
  ].join("\n");

  it("lifts the command's secrets into references, redacts the title and the question, and keeps the rest", () => {
    const lifted = liftTopicSecrets(secretTopic, []);
    expect(lifted.secrets).toEqual({ A3R_SECRET_API_KEY: "sk-proj-Rk3Tz8Wq1Yx6Lm2Np9Vb4" });
    expect(lifted.text).toContain("title: Does lr matter? key [REDACTED]");
    expect(lifted.text).toContain("redis://:[REDACTED]@cache:6379");
    for (const secret of ["Qz8WxTk3", "Rk3Tz8Wq", "Gh4Lp9Xs"]) expect(lifted.text).not.toContain(secret);
    const parsed = parseTopic(lifted.text, { file: "t.md" });
    expect(parsed.base?.command).toBe('node t.js --api-key "${A3R_SECRET_API_KEY}" --lr 0.1');
    expect(missingSecretReferences(parsed, {})).toEqual(["A3R_SECRET_API_KEY"]);
    expect(missingSecretReferences(parsed, { A3R_SECRET_API_KEY: "x" })).toEqual([]);
  });

  it("returns a topic without secrets as it is", () => {
    const plain = secretTopic
      .replace(/ --api-key sk-\S+/, "")
      .replace(/sk-\S+/g, "none")
      .replace("redis://:Gh4Lp9Xs3Vb7@", "redis://");
    expect(liftTopicSecrets(plain, [])).toEqual({ text: plain, secrets: {} });
  });
});
