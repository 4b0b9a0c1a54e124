import { formatNumber } from "../domain/configurations.ts";
import type { IncumbentComparison } from "../domain/incumbent.ts";

/**
 * How one comparison was tested, for the tables (domain/incumbent.ts's rule, fixed by the
 * campaign's design): "paired, 4 seeds (df 3)", "Welch (df 3.8)", or Welch guarded by the
 * paired error at two or three matched seeds.
 */
export function testText(comparison: Pick<IncumbentComparison, "matched" | "df">): string {
  const matched = comparison.matched;
  const name = matched?.paired ? `paired, ${matched.seeds} seeds` : matched ? `Welch, guarded by ${matched.seeds} matched seeds` : "Welch";
  return comparison.df === undefined ? name : `${name} (df ${formatNumber(comparison.df)})`;
}
