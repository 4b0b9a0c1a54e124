import { describe, expect, it } from "vitest";
import { seedFromRun } from "./swarm-command.ts";

describe("a swarm client's task seed inside a run", () => {
  it("follows the run's seed and the client's index, and is random outside a run", () => {
    const one = seedFromRun({ A3R_SEED: "1", A3R_CLIENT_INDEX: "1" });
    expect(one).toBe(seedFromRun({ A3R_SEED: "1", A3R_CLIENT_INDEX: "1" }));
    expect(seedFromRun({ A3R_SEED: "2", A3R_CLIENT_INDEX: "1" })).not.toBe(one);
    expect(seedFromRun({ A3R_SEED: "1", A3R_CLIENT_INDEX: "2" })).not.toBe(one);
    expect(seedFromRun({})).toBeUndefined();
    expect(seedFromRun({ A3R_SEED: "not a number" })).toBeUndefined();
    expect(seedFromRun({ A3R_SEED: "999999999", A3R_CLIENT_INDEX: "9999" })).toBeLessThan(2 ** 31);
  });
});
