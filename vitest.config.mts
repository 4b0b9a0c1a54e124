import { relative } from "node:path";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Integration files that take a minute or more of one fork each, longest first. Vitest
 * starts files it has no timings for largest first, and these are small files around one
 * long case (a Python run, a learning run, a whole campaign): on a fresh clone they started
 * last and ran on alone after everything else had finished. Started first, they overlap
 * the many short files instead. A file that is missing here still runs, only later.
 */
const longFirst = [
  "swarm/engines/vllm/vllm-engine.int.test.ts",
  "swarm/python/pytest.int.test.ts",
  "leader/planners/llm/llm-campaign.int.test.ts",
  "leader/graph/kill-resume.int.test.ts",
  "cli/research-command.int.test.ts",
  "cli/override-landing.int.test.ts",
  "cli/review.int.test.ts",
  "hosts/local/local-launcher.int.test.ts",
  "swarm/engines/embedded/learning.int.test.ts",
  "cli/hosts-command.int.test.ts",
  "cli/history.int.test.ts",
  "cli/rebuild-checkpoint.int.test.ts",
  "leader/graph/leader-graph.int.test.ts",
];

class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification): number => {
      const index = longFirst.indexOf(relative(import.meta.dirname, spec.moduleId));
      return index === -1 ? longFirst.length : index;
    };
    // Stable: within a group the listed files move to the front, the rest keep Vitest's order.
    const groupOf = (spec: TestSpecification): number => spec.project.config.sequence.groupOrder;
    return sorted
      .map((spec, position) => ({ spec, position }))
      .sort((a, b) => groupOf(a.spec) - groupOf(b.spec) || rank(a.spec) - rank(b.spec) || a.position - b.position)
      .map(({ spec }) => spec);
  }
}

// Two projects: fast pure tests beside the code, and integration tests that start real
// servers and child processes (their own ports, temp dirs), which need longer timeouts.
export default defineConfig({
  test: {
    sequence: { sequencer: LongFirstSequencer },
    projects: [
      {
        test: {
          name: "unit",
          include: ["**/*.test.ts"],
          exclude: ["**/*.int.test.ts", "node_modules/**", "runs/**", ".venv/**", ".scratch/**"],
          testTimeout: 20_000,
          // Pure tests share one module graph per worker: loading it anew for each of ~80
          // files cost most of this project's time.
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: "integration",
          include: ["**/*.int.test.ts"],
          exclude: ["node_modules/**", "runs/**", ".venv/**", ".scratch/**"],
          testTimeout: 120_000,
          hookTimeout: 60_000,
          // Runs are unconfined here unless a test asks for the sandbox (the worker's
          // sandbox tests do): many tests watch a run's processes from outside, through pid
          // and gate files in their temp folder, which a sandboxed run cannot see.
          // `A3R_SANDBOX=bwrap npm test` runs every worker test inside bubblewrap.
          env: { A3R_SANDBOX: process.env.A3R_SANDBOX ?? "none" },
          pool: "forks",
          // Four at once: they mostly wait on child processes.
          maxWorkers: 4,
          // Files run one after another in each fork, sharing its module graph: importing
          // the leader, the swarm and their packages anew for each of ~100 files cost a
          // sixth of the suite's CPU. No integration test changes process-wide state it does
          // not restore (environment, cwd, globals, mocks), which this relies on.
          isolate: false,
          // Integration tests run after the unit tests, in their own group.
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
