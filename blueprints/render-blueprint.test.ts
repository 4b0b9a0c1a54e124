import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import type { Blueprint } from "./blueprint.ts";
import { blueprintMeaning } from "./blueprint-meaning.ts";
import { auditBlueprint } from "./audit-blueprint.ts";
import { parseBlueprint } from "./parse-blueprint.ts";
import { codeSpan, fencedBlock, renderBlueprint } from "./render-blueprint.ts";
import { parseTimeBudget } from "./section-values.ts";

const example = (name: string): string => readFileSync(new URL(`../examples/blueprints/${name}`, import.meta.url), "utf8");

describe("renderBlueprint round trip", () => {
  it.each(["grpo-lr-3e-6.md", "grpo-lr-3e-6.agentjet.md"])("parse(render(parse(%s))) means the same", (name) => {
    const first = parseBlueprint(example(name), name);
    const rendered = renderBlueprint(first);
    const second = parseBlueprint(rendered);
    expect(blueprintMeaning(second)).toEqual(blueprintMeaning(first));
    expect(second.format).toBe("a3r");
    expect(second.frontMatter).toMatchObject({ a3r: "blueprint/v1", id: "grpo-lr-3e-6", mode: "swarm" });
    expect(renderBlueprint(second)).toBe(rendered);
    expect(auditBlueprint(rendered)).toEqual([]);
  });

  it("keeps unknown front-matter keys, their types and order", () => {
    const text = example("grpo-lr-3e-6.md").replace(
      "overrides: { lr: 3.0e-6 }",
      'overrides: { lr: 3.0e-6 }\nleader_note: { planned_at: 2026-01-01, tags: [a, b], code: "0123", retry: null }\nx-priority: 2',
    );
    const first = parseBlueprint(text);
    const second = parseBlueprint(renderBlueprint(first));
    expect(second.frontMatter).toEqual(first.frontMatter);
    expect(second.frontMatter.leader_note).toEqual({ planned_at: "2026-01-01", tags: ["a", "b"], code: "0123", retry: null });
    expect(Object.keys(second.frontMatter)).toEqual(Object.keys(first.frontMatter));
  });

  it("writes the a3r form: front matter, title, eight sections, paths in backticks, command fenced", () => {
    const rendered = renderBlueprint(parseBlueprint(example("grpo-lr-3e-6.agentjet.md")));
    expect(rendered.startsWith("---\na3r: blueprint/v1\nid: grpo-lr-3e-6\nmode: swarm\n---\n# Experiment Blueprint: grpo-lr-3e-6\n")).toBe(true);
    expect(rendered.match(/^## .+$/gm)).toEqual([
      "## Purpose",
      "## Codebase",
      "## Virtual Environment",
      "## Configuration",
      "## Command",
      "## Result Directory",
      "## Time Budget",
      "## Additional Notes",
    ]);
    expect(rendered).toContain("## Codebase\n\n`/opt/a3r/examples/grpo-arithmetic`\n");
    expect(rendered).toContain("## Command\n\n```bash\ncd /opt/a3r/examples/grpo-arithmetic\n");
  });

  it("chooses fences and code spans that the content cannot close", () => {
    expect(codeSpan("/a/b`c")).toBe("``/a/b`c``");
    expect(fencedBlock("echo ```\nls")).toBe("````bash\necho ```\nls\n````");
  });
});

/** A small seeded generator, so a failing case can be replayed from its seed. */
function generator(seed: number): { int(max: number): number; pick<T>(items: readonly T[]): T; chance(p: number): boolean } {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    int: (max) => Math.floor(next() * max),
    pick: (items) => items[Math.floor(next() * items.length)]!,
    chance: (p) => next() < p,
  };
}

const words = [
  "reward",
  "GRPO",
  "lr=3e-6",
  "`batch`",
  "H2:",
  "a # b",
  "50%",
  '"quoted"',
  "'single'",
  "中文",
  "🙂",
  "x: y",
  "[link](http://x)",
  "*em*",
  "- item",
  "1. step",
  "--flag",
  "\\back",
];
const commandLines = [
  "python train.py --lr 3e-6 > out.log 2>&1",
  "## a shell comment that looks like a heading",
  "# another comment",
  'echo `date` && echo "$HOME"',
  "```",
  "cat <<'EOF' > config.yaml",
  "lr: 3e-6",
  "EOF",
  "  --indented continuation \\",
  "npx a3r swarm client --episodes 10 &",
  "rm -rf ./outputs/tmp",
];
const trickyValues: unknown[] = [
  "0123",
  "2026-01-01",
  "yes",
  "no",
  "null",
  "~",
  "#not a comment",
  ": colon",
  "- dash",
  "3e-6",
  "",
  " padded ",
  "multi\nline",
  0,
  -1.5,
  3e-6,
  true,
  false,
  null,
  ["a", 1, null],
  { nested: { deep: "0o17" } },
  "@at",
  "`tick`",
  "{flow}",
  "[list]",
  "*star",
  "!tag",
  "%percent",
  "'q'",
];
const budgets = ["4h", "90m", "1h30m", "2 hours", "45m (hard kill)", "20 minutes", "2d"];

function line(random: ReturnType<typeof generator>): string {
  return Array.from({ length: 1 + random.int(8) }, () => random.pick(words)).join(" ");
}

function text(random: ReturnType<typeof generator>, maxLines: number): string {
  return (
    Array.from({ length: 1 + random.int(maxLines) }, () => (random.chance(0.15) ? "" : line(random)))
      .join("\n")
      .replace(/^\n+|\n+$/g, "")
      .replace(/\n{2,}/g, "\n\n") || "text"
  );
}

function path(random: ReturnType<typeof generator>): string {
  const segments = Array.from({ length: 1 + random.int(4) }, () => random.pick(["opt", "a3r", "runs", "my code", "x.y-z_1", "中文", "v2.0"]));
  return `/${segments.join("/")}`;
}

function generateBlueprint(seed: number): Blueprint {
  const random = generator(seed);
  const id = `b${seed}-${random.pick(["lr", "s1.a", "x_y", "0"])}`;
  const mode = random.chance(0.5) ? "swarm" : "classic";
  const timeBudget = random.pick(budgets);
  const frontMatter: Record<string, unknown> = {};
  if (random.chance(0.7))
    Object.assign(frontMatter, { campaign: "camp-1", stage: random.int(5), hypothesis: `H${random.int(9)}`, gpus: random.int(8), seed: random.int(100) });
  if (random.chance(0.5)) frontMatter.metric = { name: "reward_mean", goal: random.pick(["maximize", "minimize"]) };
  if (random.chance(0.5)) frontMatter.overrides = { lr: 3e-6, batch_size: 32, note: random.pick(trickyValues) };
  for (let index = 0; index < random.int(5); index += 1) frontMatter[`extra_${index}_${random.pick(["a", "b-c", "d.e"])}`] = random.pick(trickyValues);
  return {
    id,
    mode,
    purpose: text(random, 6),
    codebase: path(random),
    venv: `${path(random)}/bin/python`,
    config: random.chance(0.3) ? null : `${path(random)}.yaml`,
    command: Array.from({ length: 1 + random.int(6) }, () => random.pick(commandLines)).join("\n"),
    resultDir: path(random),
    timeBudgetMs: parseTimeBudget(timeBudget)!,
    timeBudget,
    notes: random.chance(0.2) ? "" : `${text(random, 5)}${random.chance(0.3) ? "\n\n```bash\n## not a section\n```" : ""}`,
    frontMatter,
    format: "a3r",
    lines: {},
  };
}

describe("render and parse over generated blueprints", () => {
  it("parse(render(b)) means b, and render is stable, for 300 generated blueprints", () => {
    for (let seed = 1; seed <= 300; seed += 1) {
      const blueprint = generateBlueprint(seed);
      const rendered = renderBlueprint(blueprint);
      let parsed: Blueprint;
      try {
        parsed = parseBlueprint(rendered);
      } catch (error) {
        throw new Error(`seed ${seed}: ${(error as Error).message}\n${rendered}`);
      }
      expect(blueprintMeaning(parsed), `seed ${seed}\n${rendered}`).toEqual(blueprintMeaning(blueprint));
      expect(renderBlueprint(parsed), `seed ${seed}`).toBe(rendered);
    }
  });
});
