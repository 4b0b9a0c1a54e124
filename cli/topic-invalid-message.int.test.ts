import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runA3r } from "../test-support/run-cli.ts";

/** TOPIC_INVALID names the file and line once: "topic.md:1: metric is missing", not "topic.md:1: topic.md:1: ...". */
describe("a topic error names its place once", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-topic-invalid-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("research on a topic without a metric", async () => {
    const file = join(dir, "topic.md");
    await writeFile(file, "---\ntitle: No metric\nseeds: 2\n---\nDoes lr matter?\n");
    const result = await runA3r(["research", file, "--runs-dir", join(dir, "runs")]);
    expect(result.code).toBe(1);
    const line = result.stderr.split("\n").find((text) => text.includes("TOPIC_INVALID"))!;
    expect(line).toMatch(/^error \[TOPIC_INVALID\] \S*topic\.md:1: metric is missing$/);
    expect(line.split("topic.md:1:")).toHaveLength(2);
  });
});
