import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "vitest";
import { slowTests, slowTierNote } from "../../../test-support/slow-tests.ts";
import { temporaryDirectory } from "../../server/server-process.test-support.ts";
import { describeEngineConformance } from "../engine-conformance.test-support.ts";
import { pythonEnvironment } from "./python-path.ts";
import { VllmEngine } from "./vllm-engine.ts";
import { vllmEngineConfigSchema } from "./vllm-config.ts";

/**
 * The vllm engine through the engine conformance suite, on CPU: a3r's reference inference
 * server serving the tiny torch model (swarm/python) and the persistent trainer, exactly as
 * vllm-engine.int.test.ts runs them. Only Debian's python3-torch is needed.
 */
const python = "/usr/bin/python3";
const torchMissing = spawnSync(python, ["-c", "import torch"], { stdio: "ignore" }).status !== 0;

if (torchMissing || !slowTests) {
  // Slow tier: vllm-engine.int.test.ts covers this engine end to end in every run; the
  // suite repeats its two Python processes' start (CI runs it after npm test).
  describe.skip("engine conformance: vllm", () => {
    it(torchMissing ? `needs ${python} with torch (apt-get install python3-torch)` : `runs in the slow tier${slowTierNote}`, () => undefined);
  });
} else {
  describeEngineConformance(
    "vllm (reference server + tiny model + persistent trainer, CPU)",
    async () => {
      const directory = await temporaryDirectory("vllm-conformance");
      const tinyModel = join(directory.path, "tiny");
      const made = spawnSync(python, ["-m", "a3r_swarm.tiny", "init", "--out", tinyModel, "--seed", "0"], {
        env: pythonEnvironment(process.env),
        encoding: "utf8",
      });
      if (made.status !== 0) throw new Error(`tiny model: ${made.stderr}`);
      const engine = new VllmEngine(
        vllmEngineConfigSchema.parse({
          kind: "vllm",
          model: tinyModel,
          python,
          seed: 1,
          optimizer: { lr: 0.02, kl_coef: 0.05, clip: 0.2 },
          experiment_dir: join(directory.path, "experiment"),
          inference: { server: "reference", start_timeout_ms: 240_000 },
          trainer: { device: "cpu" },
          lora: { rank: 16, alpha: 64, target_modules: ["lm_head"] },
        }),
      );
      await engine.load();
      return {
        engine,
        cleanup: async () => {
          await engine.close();
          await directory.remove();
        },
      };
    },
    // Loading starts two Python processes that import torch: about 10 s alone, minutes on a
    // machine busy with the rest of the suite.
    { setupTimeoutMs: 300_000 },
  );
}
