import { describe, expect, it } from "vitest";
import { progressBar, renderStatus, sparkline } from "./swarm-status-view.ts";

describe("swarm status view", () => {
  it("draws a bar proportional to progress, clamped to [0, 1]", () => {
    expect(progressBar(0.5, 10)).toBe("[#####.....]");
    expect(progressBar(2, 4)).toBe("[####]");
    expect(progressBar(Number.NaN, 4)).toBe("[....]");
  });

  it("scales a sparkline between min and max", () => {
    expect(sparkline([0, 0.5, 1])).toBe("▁▅█");
    expect(sparkline([])).toBe("");
  });

  it("renders state, step, pool target for the strategy, episodes and rewards", () => {
    const text = renderStatus({
      url: "http://x",
      status: { engine_status: "ENGINE.ROLLING", engine_status_detail: "rolling at step 3", global_step: 3, max_steps: 10 },
      pool: {
        sample_collection_method: "rollout_until_finish_enough_tasks",
        completed_tasks: 2,
        completed_task_target: 4,
        completed_episodes: 9,
        fraction: 0.5,
        running_episodes: 1,
        max_env_worker: 8,
        counters: { episodes_claimed: 12, episodes_ended: 10 },
        running_episode_details: {
          abcdef123456: { episode_status: "running", client_uuid: "client-1", episode_type: "train", llm_call_count: "2", time_since_last_activity: "1.3" },
        },
      },
      metrics: [{ reward_mean: 0.1 }, { reward_mean: 0.4 }],
    });
    expect(text).toContain("ENGINE.ROLLING");
    expect(text).toContain("3 / 10");
    expect(text).toContain("2/4 tasks with num_repeat episodes");
    expect(text).toContain("running 1/8, claimed 12");
    expect(text).toContain("last 0.400");
    expect(text).toContain("abcdef12");
    expect(text).toContain("1.3");
  });

  it("shows a client's escape sequences as text instead of letting them act on the terminal", () => {
    const text = renderStatus({
      url: "http://x",
      status: { engine_status: "ENGINE.ROLLING", engine_status_detail: "\x1b]0;owned\x07", global_step: 1, max_steps: 0 },
      pool: { running_episode_details: { "\x1b[2Jabc": { episode_status: "running", client_uuid: "\x1b[31mred", episode_type: "train" } } },
      metrics: [],
    });
    expect(text).not.toContain("\x1b");
    expect(text).toContain("\\x1b");
  });
});
