import { describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { tokenWeakness } from "./token-strength.ts";

describe("token strength", () => {
  it("accepts random hex and base64 tokens", () => {
    for (let i = 0; i < 50; i++) {
      expect(tokenWeakness(randomBytes(24).toString("hex"))).toBeUndefined();
      expect(tokenWeakness(randomBytes(24).toString("base64url"))).toBeUndefined();
    }
  });

  it("refuses long tokens that carry little information, saying why", () => {
    expect(tokenWeakness(" ".repeat(24))).toBe("it contains whitespace");
    expect(tokenWeakness("a".repeat(64))).toMatch(/about 0 bits/);
    expect(tokenWeakness("abababababababababababab")).toMatch(/2 distinct characters/);
    expect(tokenWeakness("passwordpasswordpassword")).toMatch(/under 96/);
  });
});
