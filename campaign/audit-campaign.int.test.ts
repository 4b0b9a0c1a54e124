import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendFile, cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { auditCampaign } from "./audit-campaign.ts";
import type { Finding } from "./finding.ts";

const fixtures = new URL("./__fixtures__/campaigns/", import.meta.url).pathname;

let root: string;
beforeEach(async () => {
  const parent = await mkdtemp(join(tmpdir(), "a3r-audit-campaign-"));
  root = join(parent, "demo");
  await cp(join(fixtures, "explained"), root, { recursive: true });
});
afterEach(async () => {
  await rm(join(root, ".."), { recursive: true, force: true });
});

const codes = (findings: Finding[]) => findings.map((finding) => `${finding.severity} ${finding.code}`).sort();

describe("campaign audit", () => {
  it("passes a campaign whose missing result is explained by a skip event", async () => {
    expect(await auditCampaign(join(fixtures, "explained"))).toEqual([]);
  });

  it("reports a blueprint that has neither a result directory nor a reason", async () => {
    const findings = await auditCampaign(join(fixtures, "unaccounted"));
    expect(codes(findings)).toEqual(["error BLUEPRINT_UNACCOUNTED"]);
    expect(findings[0]?.file).toBe(join(fixtures, "unaccounted", "stages", "1", "blueprints", "s1-lr-1e-5.md"));
    expect(findings[0]?.hint).toContain('"blueprintId":"s1-lr-1e-5"');
  });

  it("accepts any event that names the blueprint and gives a reason", async () => {
    const events = (await readFile(join(root, "events.jsonl"), "utf8")).split("\n").filter((line) => !line.includes("blueprint.skipped"));
    await writeFile(join(root, "events.jsonl"), `${events.join("\n")}\n`);
    expect(codes(await auditCampaign(root))).toEqual(["error BLUEPRINT_UNACCOUNTED"]);
    await appendFile(
      join(root, "events.jsonl"),
      '{"time":"2026-11-28T08:02:00.000Z","kind":"leader.decided","blueprintId":"s1-lr-1e-5","reason":"budget spent on stage 2"}\n',
    );
    expect(await auditCampaign(root)).toEqual([]);
  });

  it("audits each result directory it finds", async () => {
    await writeFile(join(root, "results", "s1-lr-3e-6", "finish.flag"), "failed\n");
    const findings = await auditCampaign(root);
    expect(codes(findings)).toEqual(["error FINISH_FLAG_MISMATCH"]);
    expect(findings[0]?.file).toBe(join(root, "results", "s1-lr-3e-6", "finish.flag"));
  });

  it("reports torn and corrupt event lines and invalid ledger lines with their numbers", async () => {
    await appendFile(join(root, "ledger.jsonl"), '{"time":"2026-11-28T10:00:00.000Z","kind":"gpu","blueprintId":"s1","host":"h","gpus":"one","hours":1}\n');
    const eventsPath = join(root, "events.jsonl");
    const lines = (await readFile(eventsPath, "utf8")).split("\n");
    lines.splice(1, 0, "{not json");
    await writeFile(eventsPath, `${lines.join("\n").replace(/\n$/, "")}\n{"time":"2026-11-28T10`);
    const findings = await auditCampaign(root);
    expect(findings.map((finding) => [finding.file.slice(root.length + 1), finding.line, finding.severity, finding.code]).sort()).toEqual([
      ["events.jsonl", 2, "error", "EVENTS_LINE_INVALID"],
      ["events.jsonl", 5, "warning", "EVENTS_LINE_TORN"],
      ["ledger.jsonl", 3, "error", "LEDGER_LINE_INVALID"],
    ]);
  });

  it("flags duplicate ids, orphaned results, pending dispatches and a missing topic", async () => {
    const stage2 = join(root, "stages", "2", "blueprints");
    await mkdir(stage2, { recursive: true });
    await writeFile(join(root, "stages", "2", "plan.md"), "# plan\n");
    await cp(join(root, "stages", "1", "blueprints", "s1-lr-3e-6.md"), join(stage2, "again.md"));
    const pending = (await readFile(join(root, "stages", "1", "blueprints", "s1-lr-3e-6.md"), "utf8")).replaceAll("s1-lr-3e-6", "s2-pending");
    await writeFile(join(stage2, "s2-pending.md"), pending);
    await appendFile(
      join(root, "events.jsonl"),
      '{"time":"2026-11-28T10:00:00.000Z","kind":"blueprint.dispatched","blueprintId":"s2-pending","host":"gpu-01"}\n',
    );
    await cp(join(root, "results", "s1-lr-3e-6"), join(root, "results", "left-over"), { recursive: true });
    await rm(join(root, "topic.md"));
    expect(codes(await auditCampaign(root))).toEqual([
      "error BLUEPRINT_ID_DUPLICATE",
      "error CAMPAIGN_TOPIC_MISSING",
      "warning BLUEPRINT_FILE_NAME_MISMATCH",
      "warning BLUEPRINT_RESULT_PENDING",
      "warning RESULT_ORPHANED",
    ]);
  });

  it("includes the blueprint audit's own findings", async () => {
    const file = join(root, "stages", "1", "blueprints", "s1-lr-1e-5.md");
    await writeFile(file, (await readFile(file, "utf8")).replace("`/srv/a3r-demo/codebase`", "`relative/codebase`"));
    const findings = await auditCampaign(root);
    expect(findings.some((finding) => finding.file === file && finding.code === "PATH_RELATIVE" && finding.severity === "error")).toBe(true);
  });

  it("calls a zero-byte leader.sqlite damaged once the leader has recorded decisions, and fresh before", async () => {
    await writeFile(join(root, "leader.sqlite"), "");
    const damaged = (await auditCampaign(root)).find((finding) => finding.code === "CAMPAIGN_CHECKPOINT_UNREADABLE");
    expect(damaged?.message).toContain("is empty (0 bytes)");
    expect(damaged?.hint).toContain("--rebuild");
    const created = (await readFile(join(root, "events.jsonl"), "utf8")).split("\n").filter((line) => line.includes('"campaign.created"'));
    await writeFile(join(root, "events.jsonl"), created.map((line) => `${line}\n`).join(""));
    expect((await auditCampaign(root)).some((finding) => finding.code === "CAMPAIGN_CHECKPOINT_UNREADABLE")).toBe(false);
  });
});
