import { describe, expect, it } from "vitest";
import { existsSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { auditBlueprintFile, auditBlueprintFiles } from "./blueprint-file.ts";

const folder = fileURLToPath(new URL("./__fixtures__/broken/", import.meta.url));
const fixture = (name: string): string => `${folder}${name}`;

/**
 * Each broken fixture holds exactly one mistake; the audit must name it with the code and
 * line a person would fix, and report nothing else as an error (a finding that points at
 * the wrong line sends people hunting).
 */
const cases: [file: string, code: string, line: number][] = [
  ["missing-section.md", "SECTION_MISSING", 22],
  ["empty-section.md", "SECTION_EMPTY", 14],
  ["relative-path.md", "PATH_RELATIVE", 20],
  ["bad-duration.md", "TIME_BUDGET_INVALID", 43],
  ["bad-mode.md", "FRONT_MATTER_INVALID", 6],
  ["js-front-matter.md", "FRONT_MATTER_NOT_YAML", 1],
  ["malformed-yaml.md", "YAML_INVALID", 10],
  ["result-outside-root.md", "RESULT_DIR_OUTSIDE_ROOTS", 39],
  ["rm-rf-root.md", "COMMAND_FORBIDDEN", 34],
  ["curl-pipe-shell.md", "COMMAND_FORBIDDEN", 34],
  ["nul-byte.md", "FILE_BINARY", 16],
  ["schema-type-error.md", "FRONT_MATTER_INVALID", 7],
  ["unclosed-front-matter.md", "FRONT_MATTER_UNCLOSED", 1],
  ["duplicate-section.md", "SECTION_DUPLICATE", 49],
  ["missing-front-matter.md", "FRONT_MATTER_MISSING", 1],
  ["agentjet-relative.agentjet.md", "PATH_RELATIVE", 9],
];

describe("broken blueprint fixtures", () => {
  it.each(cases)("%s: %s on line %i", async (name, code, line) => {
    const findings = await auditBlueprintFile(fixture(name), { allowedRoots: ["/tmp/a3r-runs"] });
    const errors = findings.filter((finding) => finding.severity === "error");
    expect(errors.map(({ code: found, line: at }) => ({ code: found, line: at }))).toEqual([{ code, line }]);
    expect(errors[0]!.file).toBe(fixture(name));
    expect(errors[0]!.hint).not.toBe("");
  });

  it("never runs the JavaScript front matter of the js fixture", async () => {
    // The fixture's payload writes this file and sets a global when evaluated.
    const proof = "/tmp/a3r-js-front-matter-ran";
    rmSync(proof, { force: true });
    await auditBlueprintFile(fixture("js-front-matter.md"));
    expect(existsSync(proof)).toBe(false);
    expect((globalThis as Record<string, unknown>).a3rJsFrontMatterRan).toBeUndefined();
  });

  it("names the field of a schema error and the rule of a forbidden command", async () => {
    const [gpus] = await auditBlueprintFile(fixture("schema-type-error.md"));
    expect(gpus!.message).toContain('"gpus"');
    const [mode] = await auditBlueprintFile(fixture("bad-mode.md"));
    expect(mode!.message).toContain('"mode"');
    expect(mode!.hint).toContain("swarm");
    const [rm] = await auditBlueprintFile(fixture("rm-rf-root.md"));
    expect(rm!.message).toContain("rm-recursive-root");
    const [curl] = await auditBlueprintFile(fixture("curl-pipe-shell.md"));
    expect(curl!.message).toContain("pipe-download-to-shell");
  });

  it("finds nothing wrong with the result directory when no roots are given", async () => {
    expect(await auditBlueprintFile(fixture("result-outside-root.md"))).toEqual([]);
  });

  it("reports an id used twice on the second blueprint, naming the first", async () => {
    const a = fixture("duplicate-id-a.md");
    const b = fixture("duplicate-id-b.md");
    expect(await auditBlueprintFile(a)).toEqual([]);
    expect(await auditBlueprintFile(b)).toEqual([]);
    const findings = await auditBlueprintFiles([a, b]);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ file: b, line: 3, code: "ID_DUPLICATE", severity: "error" });
    expect(findings[0]!.message).toContain(`${a}:3`);
  });
});
