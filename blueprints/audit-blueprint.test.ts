import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { auditBlueprint, auditCampaignBlueprints, findDuplicateIds, isInside } from "./audit-blueprint.ts";
import { blueprintTemplate } from "./blueprint-template.ts";
import { mergeCommandPolicy, defaultCommandRules } from "./command-policy.ts";
import { parseBlueprint } from "./parse-blueprint.ts";

const base = readFileSync(new URL("../examples/blueprints/grpo-lr-3e-6.md", import.meta.url), "utf8");
const codes = (findings: { code: string; line: number }[]): [string, number][] => findings.map((finding) => [finding.code, finding.line]);

describe("auditBlueprint on text", () => {
  it("finds nothing in the examples and the templates", () => {
    expect(auditBlueprint(base, { allowedRoots: ["/tmp/a3r-runs"] })).toEqual([]);
    expect(auditBlueprint(blueprintTemplate({ id: "t1", mode: "classic" }))).toEqual([]);
    expect(auditBlueprint(blueprintTemplate({ id: "t2", mode: "swarm", campaign: "c1" }))).toEqual([]);
  });

  it("refuses overrides keys that would reach Object.prototype, naming the key (the worker refuses the same ones)", () => {
    for (const key of ["__proto__.polluted", "constructor.prototype.x", "optimizer..lr"]) {
      const findings = auditBlueprint(base.replace(/^overrides: .*$/m, `overrides: { "${key}": 1 }`));
      expect(
        findings.some((finding) => finding.severity === "error" && finding.message.includes("overrides") && finding.message.includes("dotted config path")),
        key,
      ).toBe(true);
    }
    expect(auditBlueprint(base.replace(/^overrides: .*$/m, "overrides: { optimizer.lr: 0.1 }"))).toEqual([]);
  });

  it("names the file it was given on every finding", () => {
    const findings = auditBlueprint(base.replace("`/opt/a3r/examples/grpo-arithmetic`", "`grpo`"), { file: "stage-1/a.md" });
    expect(findings).toEqual([
      {
        file: "stage-1/a.md",
        line: 26,
        severity: "error",
        code: "PATH_RELATIVE",
        message: 'Codebase path "grpo" is not absolute',
        hint: expect.stringContaining("full path"),
      },
    ]);
  });

  it("reports every missing section, optional notes as a warning", () => {
    const findings = auditBlueprint("---\na3r: blueprint/v1\nid: bare\nmode: classic\n---\n# Experiment Blueprint: bare\n");
    expect(findings.filter((finding) => finding.code === "SECTION_MISSING").map((finding) => finding.severity)).toEqual([
      "error",
      "error",
      "error",
      "error",
      "error",
      "error",
      "error",
      "warning",
    ]);
  });

  it("reports a relative path with ~ and says it is not expanded", () => {
    const [finding] = auditBlueprint(base.replace("`/tmp/a3r-runs/grpo-lr-3e-6`", "`~/runs/x`"));
    expect(finding).toMatchObject({ code: "PATH_RELATIVE", line: 46 });
    expect(finding!.message).toContain("~ is not expanded");
  });

  it("reports the exact command line a forbidden command is on", () => {
    const text = base.replace(".venv/bin/python clients", "rm -rf ~\n.venv/bin/python clients");
    expect(codes(auditBlueprint(text))).toEqual([["COMMAND_FORBIDDEN", 41]]);
  });

  it("warns of a literal secret in the command and names the environment variable to use instead", () => {
    const text = base.replace("--episodes 2000", "--episodes 2000 --api-key sk-proj-Abcdefghijklmnop0123456789");
    const findings = auditBlueprint(text);
    expect(findings).toEqual([expect.objectContaining({ code: "COMMAND_LITERAL_SECRET", line: 41, severity: "warning" })]);
    expect(findings[0]!.hint).toContain('"${A3R_SECRET_API_KEY}"');
    expect(JSON.stringify(findings)).not.toContain("Abcdefghijklmnop");
    // A reference is what the hint asks for: no finding.
    expect(auditBlueprint(base.replace("--episodes 2000", '--episodes 2000 --api-key "${A3R_SECRET_API_KEY}" --token $HF_TOKEN'))).toEqual([]);
  });

  it("holds a blueprint to the command rules in its own front matter, which may only add to the defaults", () => {
    const withRules = (rules: string) => base.replace("overrides: { lr: 3.0e-6 }", `overrides: { lr: 3.0e-6 }\ncommand_rules:\n${rules}`);
    const noClients = withRules('  - { id: no-clients, pattern: "clients", reason: "this campaign runs no clients", severity: error }');
    expect(codes(auditBlueprint(noClients)).map(([code]) => code)).toEqual(["COMMAND_FORBIDDEN"]);
    expect(auditBlueprint(noClients)[0]!.message).toContain("rule no-clients (this campaign runs no clients)");
    // Redefining a default rule by its id would weaken it: refused, and the defaults still apply.
    const weakened = withRules('  - { id: rm-recursive-root, pattern: "never-matches", reason: "off", severity: warning }');
    const findings = auditBlueprint(weakened.replace(".venv/bin/python clients", "rm -rf /\n.venv/bin/python clients"));
    expect(findings.map((finding) => finding.code).sort()).toEqual(["COMMAND_FORBIDDEN", "FRONT_MATTER_INVALID"]);
    expect(findings.find((finding) => finding.code === "FRONT_MATTER_INVALID")!.message).toMatch(/redefines rule "rm-recursive-root"/);
    // A malformed rule is reported once (by the front-matter check), and the defaults still apply.
    const malformed = auditBlueprint(withRules("  - { id: no-clients }"));
    expect(new Set(malformed.map((finding) => finding.code))).toEqual(new Set(["FRONT_MATTER_INVALID"]));
    expect(malformed.map((finding) => finding.message)).toContain('front matter lacks the required field "command_rules.0.pattern"');
    expect(malformed.filter((finding) => finding.message.startsWith('front matter field "command_rules":'))).toEqual([]);
  });

  it("uses a campaign's extended policy", () => {
    const rules = mergeCommandPolicy(defaultCommandRules, [
      { id: "no-background", pattern: "&\\s*$", reason: "background jobs escape supervision", severity: "warning" },
    ]);
    const findings = auditBlueprint(base, { commandRules: rules });
    expect(findings).toEqual([expect.objectContaining({ code: "COMMAND_DISCOURAGED", line: 40, severity: "warning" })]);
  });
});

describe("result directory confinement", () => {
  const withResult = (path: string): string => base.replace("`/tmp/a3r-runs/grpo-lr-3e-6`", `\`${path}\``);

  it.each([
    ["/tmp/a3r-runs/../../etc", "/etc"],
    ["/tmp/a3r-runs/x/../../../etc/passwd", "/etc/passwd"],
    ["/tmp/a3r-runs-other/x", "/tmp/a3r-runs-other/x"],
    ["/tmp", "/tmp"],
    ["/tmp/a3r-runs", "/tmp/a3r-runs"],
    ["/tmp/a3r-runs/x/..", "/tmp/a3r-runs"],
  ])("catches %s (resolves to %s)", (path, resolved) => {
    const findings = auditBlueprint(withResult(path), { allowedRoots: ["/tmp/a3r-runs"] });
    expect(codes(findings)).toEqual([["RESULT_DIR_OUTSIDE_ROOTS", 46]]);
    expect(findings[0]!.message).toContain(`resolves to ${resolved}`);
  });

  it.each(["/tmp/a3r-runs/x", "/tmp/a3r-runs/x/../y", "/tmp/a3r-runs/./a//b/", "/srv/runs/z"])("accepts %s", (path) => {
    expect(auditBlueprint(withResult(path), { allowedRoots: ["/tmp/a3r-runs/", "/srv/runs"] })).toEqual([]);
  });

  it("compares folder by folder", () => {
    expect(isInside("/runs/a", "/runs")).toBe(true);
    expect(isInside("/runs", "/runs/")).toBe(true);
    expect(isInside("/runsx", "/runs")).toBe(false);
    expect(isInside("/runs/../etc", "/runs")).toBe(false);
    expect(isInside("/anything", "/")).toBe(true);
  });
});

describe("path existence", () => {
  it("is checked only when asked, never for the result directory", () => {
    const seen: string[] = [];
    const pathExists = (path: string): boolean => {
      seen.push(path);
      return path.endsWith("python");
    };
    expect(auditBlueprint(base, { pathExists })).toEqual([]);
    expect(seen).toEqual([]);
    const findings = auditBlueprint(base, { checkPaths: true, pathExists });
    expect(codes(findings)).toEqual([
      ["PATH_NOT_FOUND", 26],
      ["PATH_NOT_FOUND", 34],
    ]);
    expect(seen).not.toContain("/tmp/a3r-runs/grpo-lr-3e-6");
  });
});

describe("auditBlueprint on a Blueprint object", () => {
  it("checks values set in code: empty fields, bad ids, bad durations, schema", () => {
    const blueprint = parseBlueprint(base, "a.md");
    const edited = {
      ...blueprint,
      id: "Bad Id",
      purpose: "",
      timeBudgetMs: Number.NaN,
      timeBudget: "soon",
      frontMatter: { ...blueprint.frontMatter, gpus: -1 },
    };
    const found = auditBlueprint(edited)
      .map((finding) => finding.code)
      .sort();
    expect(found).toEqual(["FRONT_MATTER_INVALID", "FRONT_MATTER_INVALID", "SECTION_EMPTY", "TIME_BUDGET_INVALID"]);
    expect(auditBlueprint(edited).every((finding) => finding.file === "a.md")).toBe(true);
  });

  it("finds nothing in a parsed example", () => {
    expect(auditBlueprint(parseBlueprint(base))).toEqual([]);
  });
});

describe("auditCampaignBlueprints", () => {
  it("reports each id used again, on the later blueprint, plus each blueprint's own findings", () => {
    const first = parseBlueprint(base, "a.md");
    const second = parseBlueprint(base.replace("`/opt/a3r/examples/grpo-arithmetic`", "`rel`"), "b.md");
    const third = parseBlueprint(base.replace(/grpo-lr-3e-6/g, "other"), "c.md");
    const findings = auditCampaignBlueprints([first, second, third]);
    expect(findings.map((finding) => [finding.file, finding.code, finding.line])).toEqual([
      ["b.md", "PATH_RELATIVE", 26],
      ["b.md", "ID_DUPLICATE", 3],
    ]);
    expect(findings[1]!.message).toContain("a.md:3");
    expect(findDuplicateIds([first, third])).toEqual([]);
  });
});
