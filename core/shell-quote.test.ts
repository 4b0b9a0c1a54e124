import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { shellQuote } from "./shell-quote.ts";

describe("shellQuote", () => {
  it("leaves plain words alone and makes anything else one literal word for sh", () => {
    expect(shellQuote("lr=0.5,b=1")).toBe("lr=0.5,b=1");
    expect(shellQuote("/tmp/a-b_c.yaml")).toBe("/tmp/a-b_c.yaml");
    for (const word of ["", "a b", "1 ; touch /tmp/x", "$(id)", "`id`", "it's", "~", "*", "a\nb", "'\"\\"]) {
      const echoed = execFileSync("sh", ["-c", `printf %s ${shellQuote(word)}`], { encoding: "utf8" });
      expect(echoed).toBe(word);
    }
  });
});
