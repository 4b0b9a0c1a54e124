/**
 * The slow tier. `npm test` runs every capability end to end once; tests that repeat a
 * covered path at more cost (more kill points, a second learning run through another
 * route) run only with A3R_SLOW_TESTS=1 (`npm run test:slow`, and CI after `npm test`).
 */
export const slowTests = process.env.A3R_SLOW_TESTS === "1";

/** The suffix a slow test's name carries, so a skipped one says how to run it. */
export const slowTierNote = " (slow tier: A3R_SLOW_TESTS=1)";
