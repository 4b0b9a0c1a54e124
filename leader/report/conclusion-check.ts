import type { Conclusion } from "../domain/planner.ts";

/**
 * Grounds a model-written conclusion in the campaign: each claim must cite at least one
 * experiment (blueprint id) that this campaign planned. A claim that cites none, or cites
 * an id the campaign never had, is flagged, and the report shows it as "not supported by
 * any experiment of this campaign" instead of silently dropping or trusting it.
 *
 * Left out, on purpose: whether the claim's words match the numbers (the report prints the
 * computed numbers beside it; a reader compares), and whether the cited run succeeded (a
 * claim about a failure may rightly cite the failed run). Pure.
 */
export interface CheckedClaim {
  text: string;
  experimentIds: string[];
  status: "grounded" | "flagged";
  /** Cited ids that are not experiments of this campaign. */
  unknownIds: string[];
  /** Why it is flagged, in words; undefined when grounded. */
  problem: string | undefined;
}

export interface ConclusionCheck {
  claims: CheckedClaim[];
  grounded: number;
  flagged: number;
}

export function checkConclusion(conclusion: Conclusion, knownExperimentIds: Iterable<string>): ConclusionCheck {
  const known = new Set(knownExperimentIds);
  const claims = conclusion.claims.map((claim): CheckedClaim => {
    const cited = [...new Set(claim.experimentIds.map((id) => id.trim()).filter((id) => id !== ""))];
    const unknownIds = cited.filter((id) => !known.has(id));
    let problem: string | undefined;
    if (cited.length === 0) problem = "cites no experiment";
    else if (unknownIds.length > 0)
      problem = `cites ${unknownIds.join(", ")}, which ${unknownIds.length === 1 ? "is not an experiment" : "are not experiments"} of this campaign`;
    return { text: claim.text, experimentIds: cited, status: problem === undefined ? "grounded" : "flagged", unknownIds, problem };
  });
  const flagged = claims.filter((claim) => claim.status === "flagged").length;
  return { claims, grounded: claims.length - flagged, flagged };
}
