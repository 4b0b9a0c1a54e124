import { afterEach, describe, expect, it } from "vitest";
import { parseSwarmConfig } from "../config/config.ts";
import { temporaryDirectory, waitFor } from "./server-process.test-support.ts";
import { silentLogger } from "./logger.ts";
import { TrainingCoordinator } from "./training-coordinator.ts";

/**
 * The coordinator without HTTP, on the real embedded engine: the order of a step
 * (batch fixed at ROLLING_POST, drain, train, next step) and where late episodes go.
 */
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function coordinator(lines: string[]): Promise<TrainingCoordinator> {
  const directory = await temporaryDirectory("swarm-coordinator");
  cleanups.push(directory.remove);
  const instance = new TrainingCoordinator(parseSwarmConfig(lines.join("\n"), { baseDirectory: directory.path }), silentLogger);
  cleanups.push(() => instance.stop("test over"));
  instance.start();
  await instance.idle();
  expect(instance.state.state).toBe("ENGINE.ROLLING");
  return instance;
}

function claim(instance: TrainingCoordinator, clientUuid = "c1") {
  const result = instance.claim({ clientUuid, type: "train", discardTimeoutSeconds: 60 });
  if (!result.ok) throw new Error(result.failCause);
  return result.episode;
}

const end = (instance: TrainingCoordinator, episodeUuid: string, taskId: string, reward: number): void =>
  instance.end({ clientUuid: "c1", episodeUuid, taskId, reward, isSuccess: undefined, logMetrics: {} });

describe("TrainingCoordinator", () => {
  it("fixes the batch at ROLLING_POST, refuses claims while draining, and carries late episodes to the next step", async () => {
    const instance = await coordinator([
      "train_batch_size: 1",
      "num_repeat: 2",
      "swarm_mode_sample_collection_method: rollout_until_finish_enough_episodes",
      "save_freq: 0",
    ]);
    const [first, second, late] = [claim(instance), claim(instance), claim(instance)];
    end(instance, first.episodeUuid, "a", 1);
    expect(instance.state.state).toBe("ENGINE.ROLLING");
    end(instance, second.episodeUuid, "b", 0);
    // Ready: the batch is these two; the third episode is still running, so we drain.
    expect(instance.state.state).toBe("ENGINE.ROLLING_POST");
    expect(instance.pool.size).toBe(0);
    const refused = instance.claim({ clientUuid: "c2", type: "train", discardTimeoutSeconds: 60 });
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.failCause).toContain("ENGINE.ROLLING_POST: Engine is in post-rolling phase.");

    end(instance, late.episodeUuid, "c", 1);
    // The late episode joined the pool of the next step, not this batch.
    expect(instance.pool.size).toBe(1);
    expect(instance.state.state).toBe("ENGINE.WEIGHT_SYNCING");
    await waitFor("step 1", () => (instance.globalStep === 1 && instance.state.state === "ENGINE.ROLLING" ? true : undefined));
    expect(instance.metrics[0]!.episodes).toBe(2);
    expect(instance.metrics[0]!.reward_mean).toBe(0.5);
  });

  it("goes OFFLINE with a reason at max_steps, after a checkpoint, and claims then say training finished", async () => {
    const instance = await coordinator(["train_batch_size: 1", "num_repeat: 1", "max_steps: 2", "save_freq: 0"]);
    for (const taskId of ["a", "b"]) {
      await waitFor("rolling", () => (instance.state.state === "ENGINE.ROLLING" ? true : undefined));
      end(instance, claim(instance).episodeUuid, taskId, 1);
    }
    await waitFor("offline", () => (instance.state.state === "ENGINE.OFFLINE" ? true : undefined));
    expect(instance.state.detail).toContain("finished: max_steps (2)");
    expect((await instance.checkpoints.latest())?.step).toBe(2);
    const refused = instance.claim({ clientUuid: "c1", type: "train", discardTimeoutSeconds: 60 });
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.failCause).toMatch(/^ENGINE\.OFFLINE: finished/);
  });
});
