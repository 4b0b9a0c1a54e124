import { describe, expect, it } from "vitest";
import { LinearRegex, LinearRegexError, maxLinearStates } from "./linear-regex.ts";

// Patterns a campaign might write, and texts to try them on: the linear engine must agree
// with V8 on whether each matches.
const patterns: [source: string, flags?: string][] = [
  [String.raw`\bgit\s+push\b`],
  [String.raw`curl\s`],
  [String.raw`^python3? train\.py( --[\w.=/:-]+)?$`],
  [String.raw`rm\s+-rf\s+/data`],
  [String.raw`(?:aws|gsutil)\s+(?:s3\s+)?cp\b`],
  [String.raw`[^a-z]ssh\b`, "i"],
  [String.raw`^$`],
  [String.raw`a{2,3}b`],
  [String.raw`x{2}`],
  [String.raw`\Bush`],
  [String.raw`(?<host>[a-z]+)\.example\.com`],
  [String.raw`[\]\\-]z`],
  [String.raw`\x41\u0042.`, "s"],
  [String.raw`^rm`, "m"],
  [String.raw`\p{Lu}{2}`, "u"],
  [String.raw`HF_TOKEN=\S+`],
  [String.raw`a?b?c?$`],
  [String.raw`(?:)x`],
];
const texts = [
  "git push origin main",
  "git  pushd",
  "legit push",
  "curl -s x",
  "curling",
  "python3 train.py --lr=3e-6",
  "python train.py --lr 3",
  "rm -rf /data/x",
  "rm -rf /database",
  "aws s3 cp a b",
  "gsutil cp x y",
  " SSH host",
  "xssh",
  "",
  "aab aaab ab",
  "xx",
  "push bush",
  "api.example.com",
  "]z \\z -z",
  "ABC\nD",
  "echo\nrm -rf /",
  "ÄÖ",
  "HF_TOKEN=abc",
  "abc",
  "x",
];

describe("the linear-time regex engine", () => {
  it.each(patterns)("agrees with JavaScript on %s", (source, flags = "") => {
    const linear = new LinearRegex(source, flags);
    const native = new RegExp(source, flags);
    for (const text of texts) {
      expect({ text, matches: linear.test(text) }).toEqual({ text, matches: native.test(text) });
    }
  });

  it("reports where the match is", () => {
    expect(new LinearRegex(String.raw`git\s+push`).exec("cd x && git  push")).toEqual({ index: 8, text: "git  push" });
    expect(new LinearRegex("b+").exec("aaa")).toBeUndefined();
  });

  it.each([
    ["(a+)+$", /holds a repeat/],
    ["(a|a)*", /holds an alternation/],
    ["(?:x*y)+", /holds a repeat/],
    [String.raw`(a)\1`, /backreference/],
    ["(?=a)b", /lookahead or lookbehind/],
    ["(?<!a)b", /lookahead or lookbehind/],
    ["a{1,500}", /repeat count over 100/],
  ])("refuses %s", (source, reason) => {
    expect(() => new LinearRegex(source)).toThrow(LinearRegexError);
    expect(() => new LinearRegex(source)).toThrow(reason);
  });

  it("refuses a pattern whose expanded repeats exceed the state bound", () => {
    expect(() => new LinearRegex("(?:abcdefghij){100}(?:abcdefghij){100}(?:abcdefghij){100}")).toThrow(new RegExp(`more than ${maxLinearStates} states`));
  });

  it("stays linear where V8 backtracks polynomially", () => {
    // `\s*\s*\s*x` against a long run of spaces costs V8 a cubic number of steps.
    const text = " ".repeat(20_000);
    const started = performance.now();
    expect(new LinearRegex(String.raw`\s*\s*\s*x`).test(text)).toBe(false);
    expect(new LinearRegex(String.raw`a*a*a*a*b`).test("a".repeat(20_000))).toBe(false);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe("wholeLinePattern (commands.allow)", () => {
  it("matches whole lines, accepts the documented repeated-flags shape, and stays linear on (a+)+", async () => {
    const { wholeLinePattern } = await import("./line-pattern.ts");
    const flags = wholeLinePattern(String.raw`python3 train\.py( --[\w.=/:-]+)*`);
    expect(flags.test("python3 train.py --lr=0.1 --steps=20")).toBe(true);
    expect(flags.test("python3 train.py --lr=0.1; rm -rf /")).toBe(false);
    const nested = wholeLinePattern("(a+)+");
    // 30 000 characters that make a backtracking engine try 2^n ways.
    expect(nested.test(`${"a".repeat(30_000)}!`)).toBe(false);
    expect(() => wholeLinePattern(String.raw`(a)\1`)).toThrow();
  });
  it("caps the patterns' count and length, naming the pattern past the cap", async () => {
    const { allowPatternLimits, allowPatterns, wholeLinePattern } = await import("./line-pattern.ts");
    expect(() => wholeLinePattern("a".repeat(allowPatternLimits.maxPatternLength + 1))).toThrow(/over the cap of 2000/);
    const many = Array.from({ length: allowPatternLimits.maxPatterns + 1 }, (_, i) => `python eval${i}\\.py`);
    expect(() => allowPatterns(many)).toThrow(/65 allow patterns, over the cap of 64 \(pattern 65, "python eval64/);
    expect(allowPatterns(many.slice(0, 3)).map((pattern) => pattern.test("python eval1.py"))).toEqual([false, true, false]);
    expect(() => allowPatterns(["ok", String.raw`(a)\1`])).toThrow(/allow pattern "\(a\)\\1": a backreference/);
  });
});
