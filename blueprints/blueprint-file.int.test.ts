import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isA3rError } from "../core/errors.ts";
import { auditBlueprintFile, auditBlueprintFiles, readBlueprintFile } from "./blueprint-file.ts";

const example = new URL("../examples/blueprints/grpo-lr-3e-6.md", import.meta.url);
let folder: string;
let text: string;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), "a3r-blueprint-file-"));
  text = await readFile(example, "utf8");
});
afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

async function thrown(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

describe("readBlueprintFile", () => {
  it("reads a blueprint and remembers its file", async () => {
    const file = join(folder, "ok.md");
    await writeFile(file, text);
    expect(await readBlueprintFile(file)).toMatchObject({ id: "grpo-lr-3e-6", file });
  });

  it("throws FILE_NOT_FOUND, FILE_UNREADABLE for a folder, FILE_TOO_LARGE and FILE_BINARY, each naming the file", async () => {
    const missing = join(folder, "missing.md");
    expect(await thrown(readBlueprintFile(missing))).toMatchObject({ code: "FILE_NOT_FOUND", where: missing });
    const directory = join(folder, "a-folder.md");
    await mkdir(directory);
    expect(await thrown(readBlueprintFile(directory))).toMatchObject({ code: "FILE_UNREADABLE", where: directory });
    const huge = join(folder, "huge.md");
    await writeFile(huge, text + "x".repeat(1024 * 1024));
    expect(await thrown(readBlueprintFile(huge))).toMatchObject({ code: "FILE_TOO_LARGE", where: huge });
    const binary = join(folder, "binary.md");
    await writeFile(binary, Buffer.concat([Buffer.from("# t\n\nabc"), Buffer.from([0, 1, 2])]));
    expect(await thrown(readBlueprintFile(binary))).toMatchObject({ code: "FILE_BINARY", where: `${binary}:3` });
    const latin1 = join(folder, "latin1.md");
    await writeFile(latin1, Buffer.from([0x23, 0x20, 0xe9, 0x0a]));
    expect(await thrown(readBlueprintFile(latin1))).toMatchObject({ code: "FILE_BINARY" });
  });

  it("throws with the file and line of an invalid blueprint, all findings in details", async () => {
    const file = join(folder, "invalid.md");
    await writeFile(file, text.replace("mode: swarm", "mode: turbo").replace("\n4h\n", "\nsoon\n"));
    const error = await thrown(readBlueprintFile(file));
    expect(isA3rError(error, "SCHEMA_INVALID")).toBe(true);
    expect(error).toMatchObject({ where: `${file}:6` });
    const findings = (error as { details: { findings: { code: string }[] } }).details.findings;
    expect(findings.map((finding) => finding.code)).toEqual(["FRONT_MATTER_INVALID", "TIME_BUDGET_INVALID"]);
  });

  it.skipIf(process.getuid?.() === 0)("reports a file it may not read", async () => {
    const file = join(folder, "secret.md");
    await writeFile(file, text);
    await chmod(file, 0o000);
    expect(await thrown(readBlueprintFile(file))).toMatchObject({ code: "FILE_UNREADABLE" });
    expect(await auditBlueprintFile(file)).toEqual([expect.objectContaining({ code: "FILE_UNREADABLE", line: 0 })]);
  });
});

describe("auditBlueprintFile", () => {
  it("never throws for content: every problem is a finding", async () => {
    const file = join(folder, "many.md");
    await writeFile(file, "---\nid: [unclosed\n---\n## Command\n```bash\nrm -rf /\n```\n");
    const findings = await auditBlueprintFile(file);
    expect(findings.map((finding) => finding.code)).toContain("YAML_INVALID");
    expect(findings.map((finding) => finding.code)).toContain("COMMAND_FORBIDDEN");
    expect(findings.every((finding) => finding.file === file)).toBe(true);
  });

  it("audits a set and finds shared ids across files", async () => {
    const a = join(folder, "set-a.md");
    const b = join(folder, "set-b.md");
    await writeFile(a, text);
    await writeFile(b, text);
    expect(await auditBlueprintFiles([a, b])).toEqual([expect.objectContaining({ file: b, code: "ID_DUPLICATE", line: 3 })]);
  });
});
