import { describe, expect, it } from "vitest";
import { overridesAsWords, substitutePlaceholders } from "./placeholders.ts";

describe("placeholders", () => {
  it("renders overrides as shell-quoted key=value words and fills only known placeholders", () => {
    expect(overridesAsWords({ lr: 5e-6, name: "a b" })).toBe("lr=0.000005 'name=a b'");
    expect(substitutePlaceholders("train.py --config {config} {overrides} ${HOME} {unknown}", { config: "/r/c.yaml", overrides: "lr=1" })).toBe(
      "train.py --config /r/c.yaml lr=1 ${HOME} {unknown}",
    );
  });
});
