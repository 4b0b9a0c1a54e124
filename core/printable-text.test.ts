import { describe, expect, it } from "vitest";
import { printable } from "./printable-text.ts";

describe("printable", () => {
  it("makes terminal escapes and other control characters visible, keeping newlines and tabs", () => {
    expect(printable("ok\x1b[2J\x1b]0;pwned\x07done\n\tnext\r")).toBe("ok\\x1b[2J\\x1b]0;pwned\\x07done\n\tnext\\x0d");
    expect(printable("\u009b31m")).toBe("\\x9b31m");
  });

  it("handles a megabyte of escapes in one pass", () => {
    expect(printable("\x1b".repeat(1_000_000)).length).toBe(4_000_000);
  });
});
