import { describe, expect, it } from "vitest";
import { checkConclusion } from "./conclusion-check.ts";

describe("checkConclusion", () => {
  const known = ["s1-baseline-seed1", "s1-lr-0.01-seed1", "s2-lr-0.03-seed1"];

  it("grounds a claim whose every cited id is an experiment of the campaign", () => {
    const check = checkConclusion(
      { answer: "a", claims: [{ text: "lr 0.03 wins", experimentIds: ["s2-lr-0.03-seed1", " s1-baseline-seed1 ", "s2-lr-0.03-seed1"] }], caveats: [] },
      known,
    );
    expect(check).toEqual({
      claims: [{ text: "lr 0.03 wins", experimentIds: ["s2-lr-0.03-seed1", "s1-baseline-seed1"], status: "grounded", unknownIds: [], problem: undefined }],
      grounded: 1,
      flagged: 0,
    });
  });

  it("flags a claim that cites an id the campaign never had, even beside a real one", () => {
    const check = checkConclusion(
      { answer: "a", claims: [{ text: "lr 3 is better", experimentIds: ["s1-baseline-seed1", "s3-lr-3-seed1", "s9-x"] }], caveats: [] },
      known,
    );
    expect(check.claims[0]).toMatchObject({
      status: "flagged",
      unknownIds: ["s3-lr-3-seed1", "s9-x"],
      problem: "cites s3-lr-3-seed1, s9-x, which are not experiments of this campaign",
    });
    expect(check.flagged).toBe(1);
  });

  it("flags a claim that cites nothing (blank ids count as nothing)", () => {
    const check = checkConclusion(
      {
        answer: "a",
        claims: [
          { text: "it is obvious", experimentIds: [] },
          { text: "trust me", experimentIds: ["  "] },
        ],
        caveats: [],
      },
      known,
    );
    expect(check.claims.map((claim) => [claim.status, claim.problem])).toEqual([
      ["flagged", "cites no experiment"],
      ["flagged", "cites no experiment"],
    ]);
    expect(check).toMatchObject({ grounded: 0, flagged: 2 });
  });

  it("does not mistake an object's inherited names for experiment ids", () => {
    expect(checkConclusion({ answer: "a", claims: [{ text: "x", experimentIds: ["constructor"] }], caveats: [] }, known).claims[0]!.status).toBe("flagged");
  });
});
