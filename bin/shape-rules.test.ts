import { describe, expect, it } from "vitest";
import { folderCycles, folderOf, formatCycle, longFunctions, stronglyConnected } from "./shape-rules.mjs";

const module = (source: string, ...imports: string[]) => ({ source, dependencies: imports.map((resolved) => ({ resolved })) });
const body = (lines: number) => Array.from({ length: lines - 2 }, (_, i) => `  const v${i} = ${i};`).join("\n");

describe("folder cycles", () => {
  it("counts a top-level folder's root files as a folder of their own", () => {
    expect(folderOf("worker/run.ts")).toBe("worker");
    expect(folderOf("worker/launch/plan.ts")).toBe("worker/launch");
  });

  it("reports a cycle between two folders with the imports that form each edge", () => {
    const cycles = folderCycles([
      module("leader/graph/report-node.ts", "leader/report/campaign-report.ts", "leader/graph/steps.ts"),
      module("leader/report/campaign-report.ts", "leader/graph/steps.ts"),
      module("leader/graph/steps.ts"),
    ]);
    expect(cycles).toEqual([
      {
        folders: ["leader/graph", "leader/report"],
        edges: [
          { from: "leader/graph", to: "leader/report", imports: ["leader/graph/report-node.ts → leader/report/campaign-report.ts"] },
          { from: "leader/report", to: "leader/graph", imports: ["leader/report/campaign-report.ts → leader/graph/steps.ts"] },
        ],
      },
    ]);
    expect(formatCycle(cycles[0]!)).toContain("folder cycle leader/graph ↔ leader/report: leader/graph → leader/report (");
  });

  it("finds a root ↔ subfolder cycle and a longer one through three folders", () => {
    const cycles = folderCycles([
      module("worker/index.ts", "worker/launch/a.ts"),
      module("worker/launch/a.ts", "worker/settings.ts"),
      module("worker/settings.ts"),
      module("hosts/a/x.ts", "hosts/b/y.ts"),
      module("hosts/b/y.ts", "hosts/c/z.ts"),
      module("hosts/c/z.ts", "hosts/a/w.ts"),
      module("hosts/a/w.ts"),
    ]);
    expect(cycles.map((cycle) => cycle.folders)).toEqual([
      ["hosts/a", "hosts/b", "hosts/c"],
      ["worker", "worker/launch"],
    ]);
  });

  it("ignores imports that leave the top-level folder, test code, and one-way edges", () => {
    const cycles = folderCycles([
      module("leader/a/x.ts", "campaign/y.ts", "leader/b/y.ts"),
      module("campaign/y.ts", "leader/a/x.ts"),
      module("leader/b/y.ts", "leader/a/x.test-support.ts"),
      module("leader/b/y.test.ts", "leader/a/x.ts"),
      module("leader/a/x.test-support.ts", "leader/b/y.ts"),
    ]);
    expect(cycles).toEqual([]);
  });

  it("finds every strongly connected component of a graph", () => {
    const graph = new Map([
      ["a", new Map([["b", 1]])],
      [
        "b",
        new Map([
          ["a", 1],
          ["c", 1],
        ]),
      ],
      ["c", new Map([["d", 1]])],
      ["d", new Map([["c", 1]])],
    ]);
    expect(stronglyConnected(graph).sort()).toEqual([
      ["a", "b"],
      ["c", "d"],
    ]);
  });
});

describe("long functions", () => {
  it("reports declarations, methods and arrows over the limit with their first line and length", () => {
    const source = [
      "#!/usr/bin/env node",
      "// é: a multi-byte character before the functions",
      `export function long() {\n${body(121)}\n}`,
      `function short() {\n${body(120)}\n}`,
      `class C {\n  method() {\n${body(122)}\n  }\n}`,
      `const arrow = async (x: number): Promise<void> => {\n${body(125)}\n};`,
      `items.forEach((item) => {\n${body(130)}\n});`,
    ].join("\n");
    expect(longFunctions(source)).toEqual([
      { name: "long", line: 3, lines: 121 },
      { name: "method", line: 245, lines: 122 },
      { name: "arrow", line: 368, lines: 125 },
      { name: "(callback of forEach)", line: 493, lines: 130 },
    ]);
  });

  it("counts an outer function that holds a long inner one, and takes another limit", () => {
    const source = `function outer() {\n  const inner = () => {\n${body(10)}\n  };\n}`;
    expect(longFunctions(source, { max: 9 })).toEqual([
      { name: "outer", line: 1, lines: 12 },
      { name: "inner", line: 2, lines: 10 },
    ]);
    expect(longFunctions(source)).toEqual([]);
  });
});
