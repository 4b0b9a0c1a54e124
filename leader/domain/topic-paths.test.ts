import { describe, expect, it } from "vitest";
import { parseTopic } from "./topic.ts";
import { topicTextWithAbsolutePaths } from "./topic-paths.ts";

const topic = `---
# the base experiment lives two folders up
metric: { name: reward, goal: maximize }
base:
  codebase: ../..
  interpreter: node
  config: ./cfg/x.yaml
  command: node train.js
knobs: { lr: [0.1, 0.2] }
---
Which lr?
`;

describe("topic paths relative to the topic file", () => {
  it("resolves ./ and ../ against the topic's folder and leaves a program name alone", () => {
    const parsed = parseTopic(topic, { file: "/labs/a3r/examples/topics/t.md" });
    expect(parsed.base).toMatchObject({ codebase: "/labs/a3r", interpreter: "node", config: "/labs/a3r/examples/topics/cfg/x.yaml" });
  });

  it("writes the campaign's copy with absolute paths, so it means the same from another folder", () => {
    const copy = topicTextWithAbsolutePaths(topic, "/labs/a3r/examples/topics/t.md");
    expect(copy).toContain("# the base experiment lives two folders up");
    expect(copy).toMatch(/codebase: \/labs\/a3r\n/);
    const fromElsewhere = parseTopic(copy, { file: "/var/runs/c1/topic.md" });
    expect(fromElsewhere.base).toMatchObject({ codebase: "/labs/a3r", interpreter: "node", config: "/labs/a3r/examples/topics/cfg/x.yaml" });
    expect(copy.endsWith("Which lr?\n")).toBe(true);
  });

  it("refuses a bare relative path, saying how to write one", () => {
    expect(() => parseTopic(topic.replace("codebase: ../..", "codebase: src/app"), { file: "/t/t.md" })).toThrow(
      /base\.codebase: an absolute path, or one starting with \.\/ or \.\.\//,
    );
  });

  it("leaves a topic with absolute paths as it was", () => {
    const absolute = topic.replace("codebase: ../..", "codebase: /c").replace("config: ./cfg/x.yaml", "config: /c/x.yaml");
    expect(topicTextWithAbsolutePaths(absolute, "/t/t.md")).toBe(absolute);
  });
});
