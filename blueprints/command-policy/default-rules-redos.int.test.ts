import { check } from "recheck";
import { describe, expect, it } from "vitest";
import { defaultCommandRules } from "./default-rules.ts";
import { isTriviallyLinear, linearPieces } from "./pattern-pieces.ts";

// recheck proves the default rules free of super-linear backtracking (README.md, Bounds).
// Its exact (automaton) checker reads no lookarounds, so each rule is cut into the
// lookaround-free pieces whose linearity implies the rule's (pattern-pieces.ts says why);
// a piece with no unbounded repeat is linear as it stands. This is an integration test
// only because recheck takes seconds per piece.
const pieces = [...new Set(defaultCommandRules.flatMap((rule) => linearPieces(rule.pattern)))];
const toProve = pieces.filter((piece) => !isTriviallyLinear(piece));

describe("the default command rules under recheck", () => {
  it("cuts every rule into pieces, most of them linear as they stand", () => {
    expect(pieces.length).toBeGreaterThan(defaultCommandRules.length);
    expect(toProve.length).toBeGreaterThan(0);
    expect(isTriviallyLinear(String.raw`^(?:curl|wget)(?: |$)`)).toBe(true);
    expect(isTriviallyLinear(String.raw` \x01[^ ]* [^ ]`)).toBe(false);
  });

  it("finds every piece that repeats linear", { timeout: 120_000 }, async () => {
    const verdicts = await Promise.all(
      toProve.map(async (piece) => {
        const result = await check(piece, "", { checker: "automaton", timeout: 60_000 });
        return { piece, status: result.status, complexity: result.status === "safe" ? result.complexity.type : undefined };
      }),
    );
    expect(verdicts.filter((verdict) => verdict.status !== "safe" || verdict.complexity !== "linear")).toEqual([]);
  });

  it("would refuse a piece that backtracks", { timeout: 60_000 }, async () => {
    // The check above can fail: recheck finds the polynomial shape the rules avoid.
    const result = await check(String.raw` \S*\.ssh(?:/\S*)?$`, "", { checker: "automaton", timeout: 30_000 });
    expect(result.status).toBe("vulnerable");
  });
});
