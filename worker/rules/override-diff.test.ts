import { describe, expect, it } from "vitest";
import { diffOverrides, formatOverrideDiff } from "./override-diff.ts";

describe("override diff", () => {
  it("writes a diff a person can read", () => {
    const changes = diffOverrides({ lr: 0.001, port: 80 }, { lr: 0.0005, port: 80, batch_size: 16 });
    expect(changes).toEqual([
      { key: "batch_size", from: undefined, to: 16 },
      { key: "lr", from: 0.001, to: 0.0005 },
    ]);
    expect(formatOverrideDiff(changes)).toBe("```diff\n+ batch_size: 16\n- lr: 0.001\n+ lr: 0.0005\n```");
    expect(formatOverrideDiff([], { commandBefore: "a", commandAfter: "b" })).toContain("- command: a\n+ command: b");
    expect(formatOverrideDiff([])).toBe("(no change to the configuration)");
  });
});
