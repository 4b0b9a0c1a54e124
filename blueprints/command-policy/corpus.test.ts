import { describe, expect, it } from "vitest";
import { checkCommand, defaultCommandRules } from "../command-policy.ts";
import { readCorpus } from "./corpus/read-corpus.ts";

// The policy's corpus (corpus/): ordinary spellings of the dangers the policy
// exists for, each of which must be flagged by one of its group's rules, and ordinary
// training commands, none of which may be.
const dangerous = readCorpus(new URL("./corpus/dangerous.txt", import.meta.url));
const legitimate = readCorpus(new URL("./corpus/legitimate.txt", import.meta.url));
const ruleIds = new Set(defaultCommandRules.map((rule) => rule.id));

const errorsOf = (command: string) => checkCommand(command).filter((violation) => violation.severity === "error");

describe("the command policy corpus", () => {
  it("holds at least 150 dangerous and 150 legitimate commands, in groups naming real rules", () => {
    expect(dangerous.flatMap((group) => group.lines).length).toBeGreaterThanOrEqual(150);
    expect(legitimate.flatMap((group) => group.lines).length).toBeGreaterThanOrEqual(150);
    for (const group of dangerous) {
      expect(group.rules.length, group.name).toBeGreaterThan(0);
      for (const rule of group.rules) expect(ruleIds.has(rule), `${group.name}: ${rule}`).toBe(true);
    }
  });

  describe.each(dangerous.map((group) => [group.name, group] as const))("flags every dangerous command: %s", (_name, group) => {
    it.each(group.lines)("%s", (command) => {
      const broken = errorsOf(command).map((violation) => violation.ruleId);
      expect(
        broken.filter((rule) => group.rules.includes(rule)),
        `rules broken: ${broken.join(", ") || "none"}`,
      ).not.toEqual([]);
    });
  });

  describe.each(legitimate.map((group) => [group.name, group] as const))("passes every legitimate command: %s", (_name, group) => {
    it.each(group.lines)("%s", (command) => {
      expect(errorsOf(command)).toEqual([]);
    });
  });
});
