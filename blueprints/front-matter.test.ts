import { afterEach, describe, expect, it } from "vitest";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { matterWithSafeEngines, readFrontMatter } from "./front-matter.ts";
import { analyzeBlueprint, parseBlueprint } from "./parse-blueprint.ts";
import { blueprintTemplate } from "./blueprint-template.ts";

const proof = join(tmpdir(), `a3r-js-front-matter-proof-${process.pid}`);
const globals = globalThis as Record<string, unknown>;

afterEach(() => {
  rmSync(proof, { force: true });
  delete globals.a3rFrontMatterRan;
});

/** Front matter that, if evaluated, writes a file and sets a global. */
function payload(language: string): string {
  return [
    `---${language}`,
    `require("fs").writeFileSync(${JSON.stringify(proof)}, "ran"); globalThis.a3rFrontMatterRan = true;`,
    `({ a3r: "blueprint/v1", id: "evil", mode: "classic" })`,
    "---",
    "# Experiment Blueprint: evil",
    "",
  ].join("\n");
}

describe("front matter safety", () => {
  it.each(["js", "javascript", " js", "JavaScript", "coffee"])("never evaluates ---%s front matter, and says so", (language) => {
    const result = readFrontMatter(payload(language));
    expect(result.problems.map((item) => [item.code, item.line])).toEqual([["FRONT_MATTER_NOT_YAML", 1]]);
    expect(result.data).toEqual({});
    expect(existsSync(proof)).toBe(false);
    expect(globals.a3rFrontMatterRan).toBeUndefined();
  });

  it("configures gray-matter so that even a direct ---js parse throws instead of evaluating", () => {
    for (const language of ["js", "javascript", "coffee"]) {
      expect(() => matterWithSafeEngines(payload(language), () => ({}))).toThrow(/never evaluated/);
    }
    expect(existsSync(proof)).toBe(false);
    expect(globals.a3rFrontMatterRan).toBeUndefined();
  });

  it("refuses JavaScript front matter in parseBlueprint with the file and line", () => {
    expect(() => parseBlueprint(payload("js"), "evil.md")).toThrow(/not evaluated/);
    try {
      parseBlueprint(payload("js"), "evil.md");
    } catch (error) {
      expect(error).toMatchObject({ code: "BLUEPRINT_INVALID", where: "evil.md:1" });
    }
    expect(existsSync(proof)).toBe(false);
    expect(globals.a3rFrontMatterRan).toBeUndefined();
  });

  it("returns independent objects for two parses of the same text (no shared cache)", () => {
    const text = blueprintTemplate({ id: "cache-check" });
    const first = parseBlueprint(text);
    (first.frontMatter.overrides as Record<string, unknown>).lr = 1;
    first.frontMatter.extra = "mutated";
    const second = parseBlueprint(text);
    expect((second.frontMatter.overrides as Record<string, unknown>).lr).toBe(3e-6);
    expect(second.frontMatter.extra).toBeUndefined();
    expect(second.frontMatter).not.toBe(first.frontMatter);
  });

  it("reads YAML 1.2: dates stay strings, 0123 is decimal, yes stays a word", () => {
    const result = readFrontMatter("---\nday: 2026-01-01\ncode: 0123\nflag: yes\nnumber: 0o17\n---\nbody\n");
    expect(result.problems).toEqual([]);
    expect(result.data).toEqual({ day: "2026-01-01", code: 123, flag: "yes", number: 15 });
    expect(result.data.day).not.toBeInstanceOf(Date);
  });

  it("never builds Dates, Buffers or Sets from explicit tags, and warns instead", () => {
    const result = readFrontMatter("---\nday: !!timestamp 2026-01-01\nblob: !!binary aGVsbG8=\nset: !!set { a, b }\nfn: !!js/function 'function () {}'\n---\n");
    expect(result.data).toEqual({ day: "2026-01-01", blob: "aGVsbG8=", set: { a: null, b: null }, fn: "function () {}" });
    expect(result.problems.map((item) => [item.code, item.line, item.severity])).toEqual([
      ["YAML_WARNING", 2, "warning"],
      ["YAML_WARNING", 3, "warning"],
      ["YAML_WARNING", 4, "warning"],
      ["YAML_WARNING", 5, "warning"],
    ]);
  });

  it("turns alias bombs, absurd nesting and huge front matter into findings, never a throw", () => {
    const levels = ["a: &a [x, x, x, x, x, x, x, x, x]"];
    for (const [name, previous] of [
      ["b", "a"],
      ["c", "b"],
      ["d", "c"],
      ["e", "d"],
    ])
      levels.push(`${name}: &${name} [${Array(9).fill(`*${previous}`).join(", ")}]`);
    expect(readFrontMatter(`---\n${levels.join("\n")}\n---\n`).problems.map((item) => item.code)).toEqual(["YAML_INVALID"]);
    const nested = readFrontMatter(`---\nx: ${"[".repeat(60_000)}\n---\n`);
    expect(nested.problems.length).toBeGreaterThan(0);
    expect(nested.problems.every((item) => item.code === "YAML_INVALID")).toBe(true);
    const huge = readFrontMatter(`---\nx: "${"y".repeat(70_000)}"\n---\n# t\n`);
    expect(huge.problems.map((item) => [item.code, item.line])).toEqual([["FRONT_MATTER_TOO_LARGE", 1]]);
    expect(huge.body).toBe("# t\n");
  });

  it("gives YAML errors the line of the file they are on", () => {
    const result = readFrontMatter("---\na3r: blueprint/v1\nid: x\nbad: [1, 2\nmode: swarm\n---\n# t\n");
    expect(result.problems[0]).toMatchObject({ code: "YAML_INVALID" });
    expect(result.problems[0]!.line).toBeGreaterThanOrEqual(4);
  });

  it("reports a duplicate key as a YAML error", () => {
    const result = readFrontMatter("---\nid: a\nid: b\n---\n");
    expect(result.problems.map((item) => [item.code, item.line])).toEqual([["YAML_INVALID", 3]]);
  });

  it("maps every field, nested ones too, to its line", () => {
    const result = readFrontMatter("---\na3r: blueprint/v1\nmetric:\n  name: reward_mean\n  goal: maximize\n---\n# t\n");
    expect(result.fieldLines).toEqual({ a3r: 2, metric: 3, "metric.name": 4, "metric.goal": 5 });
    expect(result.bodyStartLine).toBe(7);
    expect(result.body).toBe("# t\n");
  });

  it("treats a file without front matter as all body", () => {
    const result = readFrontMatter("# Title\n\n## [exp_purpose]\n");
    expect(result).toMatchObject({ present: false, data: {}, bodyStartLine: 1, problems: [] });
  });

  it("refuses a front matter that is not a mapping", () => {
    const { problems } = analyzeBlueprint("---\n- a\n- b\n---\n# t\n");
    expect(problems.map((item) => item.code)).toContain("FRONT_MATTER_INVALID");
  });

  it("refuses NUL bytes and text over 1 MiB before parsing", () => {
    expect(analyzeBlueprint("---\nid: a\n---\nx\u0000y\n").problems).toEqual([expect.objectContaining({ code: "FILE_BINARY", line: 4 })]);
    expect(analyzeBlueprint(`# big\n${"x".repeat(1024 * 1024)}`).problems).toEqual([expect.objectContaining({ code: "FILE_TOO_LARGE", line: 0 })]);
    expect(() => parseBlueprint("a\u0000b", "bin.md")).toThrow(expect.objectContaining({ code: "FILE_BINARY", where: "bin.md:1" }));
  });
});
