import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { runA3r, type CliResult } from "../test-support/run-cli.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const examples = join(root, "examples/blueprints");
const broken = join(root, "blueprints/__fixtures__/broken");

const a3r = (...args: string[]): Promise<CliResult> => runA3r(args, { cwd: root });

let folder: string;
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), "a3r-blueprint-cli-"));
});
afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe.concurrent("a3r blueprint validate", () => {
  it("exits 0 and says so for a clean blueprint of either format", async () => {
    for (const name of ["grpo-lr-3e-6.md", "grpo-lr-3e-6.agentjet.md"]) {
      const result = await a3r("blueprint", "validate", join(examples, name), "--allowed-root", "/tmp/a3r-runs");
      expect(result).toMatchObject({ code: 0, stdout: "1 file checked: no findings\n" });
    }
  });

  it("checks ids per campaign: the two forms of one experiment (the AgentJet one has no campaign) pass together", async () => {
    const agentjet = join(examples, "grpo-lr-3e-6.agentjet.md");
    const result = await a3r("blueprint", "validate", join(examples, "grpo-lr-3e-6.md"), agentjet);
    expect(result.stdout).not.toContain("ID_DUPLICATE");
    expect(result.code).toBe(0);
  });

  it("reports an id used twice in one campaign", async () => {
    const copy = join(await mkdtemp(join(tmpdir(), "a3r-dup-")), "copy.md");
    await writeFile(copy, await readFile(join(examples, "grpo-lr-3e-6.md"), "utf8"));
    const result = await a3r("blueprint", "validate", join(examples, "grpo-lr-3e-6.md"), copy);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`${copy}:3: error ID_DUPLICATE blueprint id "grpo-lr-3e-6" is already used by`);
    await rm(dirname(copy), { recursive: true, force: true });
  });

  it("prints file:line: severity code message and the hint, and exits 1", async () => {
    const file = join(broken, "relative-path.md");
    const result = await a3r("blueprint", "validate", file);
    expect(result.code).toBe(1);
    const lines = result.stdout.split("\n");
    expect(lines[0]).toBe(`${file}:20: error PATH_RELATIVE Codebase path "examples/grpo-arithmetic" is not absolute`);
    expect(lines[1]).toMatch(/^ {2}hint: write the full path/);
    expect(result.stdout).toContain("1 error(s), 0 warning(s)");
  });

  it("prints the findings array with --json", async () => {
    const file = join(broken, "result-outside-root.md");
    const result = await a3r("blueprint", "validate", "--json", "--allowed-root", "/tmp/a3r-runs", "--", file);
    expect(result.code).toBe(1);
    const findings = JSON.parse(result.stdout) as { code: string; line: number; file: string }[];
    expect(findings).toEqual([expect.objectContaining({ file, code: "RESULT_DIR_OUTSIDE_ROOTS", line: 39, severity: "error" })]);
  });

  it("takes --allowed-root more than once, before or after the files, relative roots from the current folder", async () => {
    const file = join(broken, "result-outside-root.md");
    const inside = await a3r("blueprint", "validate", "--allowed-root", "/srv/runs", "--allowed-root", "/etc", file);
    expect(inside).toMatchObject({ code: 0, stdout: "1 file checked: no findings\n" });
    const outside = await a3r("blueprint", "validate", file, "--allowed-root", "/srv/runs", "--allowed-root", "runs");
    expect(outside.code).toBe(1);
    expect(outside.stdout).toContain(`outside the allowed roots (/srv/runs, ${join(root, "runs")})`);
  });

  it("checks paths only with --check-paths", async () => {
    const file = join(examples, "grpo-lr-3e-6.md");
    const result = await a3r("blueprint", "validate", "--json", "--check-paths", file);
    const codes = (JSON.parse(result.stdout) as { code: string }[]).map((finding) => finding.code);
    expect(codes).toEqual(["PATH_NOT_FOUND", "PATH_NOT_FOUND", "PATH_NOT_FOUND"]);
    expect(result.code).toBe(1);
  });

  it("exits 0 with warnings only", async () => {
    const file = join(folder, "warn.md");
    const text = await readFile(join(examples, "grpo-lr-3e-6.md"), "utf8");
    await writeFile(file, text.replace("npx a3r swarm server", "sudo npx a3r swarm server"));
    const result = await a3r("blueprint", "validate", file);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("warning COMMAND_DISCOURAGED");
  });

  it("warns of a literal key in the command, pointing at an environment variable, without printing the key", async () => {
    const file = join(folder, "secret.md");
    const text = await readFile(join(examples, "grpo-lr-3e-6.md"), "utf8");
    await writeFile(file, text.replace("--episodes 2000", "--episodes 2000 --api-key sk-proj-Abcdefghijklmnop0123456789"));
    const result = await a3r("blueprint", "validate", file);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("warning COMMAND_LITERAL_SECRET");
    expect(result.stdout).toContain("A3R_SECRET_API_KEY");
    expect(result.stdout + result.stderr).not.toContain("Abcdefghijklmnop");
  });

  it("reports a missing file and a file over 1 MiB as findings", async () => {
    const huge = join(folder, "huge.md");
    await writeFile(huge, `# big\n${"x".repeat(1024 * 1024 + 10)}\n`);
    const result = await a3r("blueprint", "validate", "--json", join(folder, "nope.md"), huge);
    expect(result.code).toBe(1);
    expect((JSON.parse(result.stdout) as { code: string }[]).map((finding) => finding.code)).toEqual(["FILE_NOT_FOUND", "FILE_TOO_LARGE"]);
  });

  it("exits 2 on an unknown flag and on a missing argument", async () => {
    const unknown = await a3r("blueprint", "validate", "--no-such-flag", join(examples, "grpo-lr-3e-6.md"));
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("--no-such-flag");
    expect((await a3r("blueprint", "validate")).code).toBe(2);
  });
});

describe.concurrent("a3r blueprint show", () => {
  it("gives the same fields for the a3r and the AgentJet example", async () => {
    const a3rForm = await a3r("blueprint", "show", "--json", join(examples, "grpo-lr-3e-6.md"));
    const agentjetForm = await a3r("blueprint", "show", "--json", join(examples, "grpo-lr-3e-6.agentjet.md"));
    expect(a3rForm.code).toBe(0);
    expect(agentjetForm.code).toBe(0);
    const pick = (text: string): Record<string, unknown> => {
      const { format: _format, file: _file, lines: _lines, frontMatter: _frontMatter, ...fields } = JSON.parse(text) as Record<string, unknown>;
      return fields;
    };
    expect(pick(agentjetForm.stdout)).toEqual(pick(a3rForm.stdout));
    expect(pick(a3rForm.stdout)).toMatchObject({ id: "grpo-lr-3e-6", mode: "swarm", timeBudgetMs: 14_400_000 });
    expect(Object.keys(pick(a3rForm.stdout))).toHaveLength(11);
  });

  it("prints a readable key: value listing", async () => {
    const result = await a3r("blueprint", "show", join(examples, "grpo-lr-3e-6.agentjet.md"));
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^id: +grpo-lr-3e-6$/m);
    expect(result.stdout).toMatch(/^resultDir: +\/tmp\/a3r-runs\/grpo-lr-3e-6$/m);
    expect(result.stdout).toMatch(/^command:\n {2}cd \/opt\/a3r\/examples\/grpo-arithmetic$/m);
    expect(result.stdout).toMatch(/^timeBudget: +4h \(14400000 ms\)$/m);
  });

  it("exits 1 with one clear line and the file:line for a broken blueprint", async () => {
    const file = join(broken, "schema-type-error.md");
    const result = await a3r("blueprint", "show", file);
    expect(result.code).toBe(1);
    expect(result.stderr.split("\n")[0]).toBe(
      `error [SCHEMA_INVALID] ${file}:7: front matter field "gpus" is invalid: Invalid input: expected number, received string`,
    );
    expect(result.stderr).toContain("hint: write the number of GPUs");
    expect(result.stderr).not.toContain("    at ");
  });

  it("refuses a binary file", async () => {
    const result = await a3r("blueprint", "show", join(broken, "nul-byte.md"));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("error [FILE_BINARY]");
  });
});

describe.concurrent("a3r blueprint new", () => {
  it.each(["swarm", "classic"])("writes a %s template that validates clean", async (mode) => {
    const file = join(folder, `new-${mode}.md`);
    const created = await a3r("blueprint", "new", "--id", `s1-${mode}`, "--mode", mode, "--out", file);
    expect(created).toMatchObject({ code: 0, stdout: `wrote ${file}\n` });
    const validated = await a3r("blueprint", "validate", file);
    expect(validated).toMatchObject({ code: 0, stdout: "1 file checked: no findings\n" });
    const shown = JSON.parse((await a3r("blueprint", "show", "--json", file)).stdout) as { id: string; mode: string };
    expect(shown).toMatchObject({ id: `s1-${mode}`, mode });
  });

  it("prints to standard output without --out, and refuses to overwrite", async () => {
    const printed = await a3r("blueprint", "new");
    expect(printed.code).toBe(0);
    expect(printed.stdout).toMatch(/^---\na3r: blueprint\/v1\nid: new-experiment\n/);
    const file = join(folder, "exists.md");
    await writeFile(file, "mine");
    const refused = await a3r("blueprint", "new", "--out", file);
    expect(refused.code).toBe(2);
    expect(await readFile(file, "utf8")).toBe("mine");
    expect((await a3r("blueprint", "new", "--out", file, "--force")).code).toBe(0);
  });

  it("exits 2 on a bad mode or an unsafe id", async () => {
    expect((await a3r("blueprint", "new", "--mode", "turbo")).code).toBe(2);
    const unsafe = await a3r("blueprint", "new", "--id", "../escape");
    expect(unsafe.code).toBe(2);
    expect(unsafe.stderr).toContain("not a safe blueprint id");
  });
});
