/**
 * The layering of a3r (ARCHITECTURE.md, "Dependency rules"), checked by `npm run check:layers`.
 * An arrow in ARCHITECTURE.md is an import allowed here; everything else is a violation.
 * Test code (tests, *.test-support.ts, test-support/, fixtures) may import anything, and no
 * production file may import it.
 */
const testCode = "(\\.test\\.ts$|\\.test-support\\.ts$|^test-support/|/__fixtures__/|/fixtures/|^bench/)";
const production = { pathNot: testCode };
const layer = (name, from, allowed) => ({
  name,
  comment: `${from} may import only ${allowed.join(", ") || "itself"} (ARCHITECTURE.md)`,
  severity: "error",
  from: { path: `^${from}/`, pathNot: testCode },
  to: { path: "^(cli|leader|worker|hosts|campaign|llm|blueprints|core|swarm|examples)/", pathNot: `^(${[from, ...allowed].join("|")})/` },
});

module.exports = {
  forbidden: [
    { name: "no-circular", severity: "error", comment: "import cycles are a design bug", from: {}, to: { circular: true } },
    {
      name: "no-test-code-in-production",
      severity: "error",
      comment: "test helpers live in test-support/ or *.test-support.ts, outside the production import graph",
      from: production,
      to: { path: `${testCode}|^node_modules/(vitest|@vitest)/` },
    },
    layer("core-imports-nothing", "core", []),
    layer("blueprints-layer", "blueprints", ["core"]),
    layer("llm-layer", "llm", ["core"]),
    layer("campaign-layer", "campaign", ["core", "blueprints", "llm"]),
    layer("swarm-stands-alone", "swarm", []),
    layer("hosts-layer", "hosts", ["core", "blueprints", "campaign"]),
    layer("worker-layer", "worker", ["core", "blueprints", "campaign", "llm", "swarm/client"]),
    layer("leader-layer", "leader", ["core", "blueprints", "campaign", "llm", "hosts"]),
    {
      name: "cli-uses-entry-modules",
      severity: "error",
      comment: "commands import each package's index.ts (core's helpers are shared directly; swarm/schema.ts is swarm's light entry for its config contract)",
      from: { path: "^cli/", pathNot: testCode },
      to: {
        path: "^(leader|worker|hosts|campaign|llm|blueprints|swarm)/",
        pathNot: "^((leader|worker|hosts|campaign|llm|blueprints|swarm)/index|swarm/schema)\\.ts$",
      },
    },
    {
      name: "leader-entry-module",
      severity: "error",
      comment: "other packages reach the leader only through leader/index.ts",
      from: { path: "^(?!leader/)", pathNot: testCode },
      to: { path: "^leader/", pathNot: "^leader/index\\.ts$" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(node_modules|runs)/" },
    tsPreCompilationDeps: true,
    parser: "swc",
    enhancedResolveOptions: { extensions: [".ts", ".js", ".mjs"] },
  },
};
