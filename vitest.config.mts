import { defineConfig } from "vitest/config";

// Two projects: fast pure tests beside the code, and integration tests that start real
// servers and child processes (their own ports, temp dirs), which need longer timeouts.
export default defineConfig({
  test: {
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
