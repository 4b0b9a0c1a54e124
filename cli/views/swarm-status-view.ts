import { printable } from "../../core/printable-text.ts";
/** Pure text rendering for `a3r swarm status` and `a3r swarm client` (no I/O here). */

const sparkTicks = "▁▂▃▄▅▆▇█";

export function progressBar(fraction: number, width = 24): string {
  const clamped = Math.max(0, Math.min(1, Number.isFinite(fraction) ? fraction : 0));
  const filled = Math.round(clamped * width);
  return `[${"#".repeat(filled)}${".".repeat(width - filled)}]`;
}

/** A sparkline of values, scaled between their min and max. */
export function sparkline(values: readonly number[]): string {
  const finite = values.filter((value) => Number.isFinite(value));
  if (finite.length === 0) return "";
  const low = Math.min(...finite);
  const high = Math.max(...finite);
  return finite.map((value) => sparkTicks[high === low ? 3 : Math.round(((value - low) / (high - low)) * (sparkTicks.length - 1))]).join("");
}

export interface StatusSnapshot {
  url: string;
  status: { engine_status: string; engine_status_detail: string; global_step: number; max_steps?: unknown };
  pool?: Record<string, unknown>;
  metrics?: Array<Record<string, number>>;
}

const targets: Record<string, [string, string, string]> = {
  rollout_until_finish_enough_episodes: ["completed_episodes", "completed_episode_target", "episodes"],
  rollout_until_finish_enough_tasks: ["completed_tasks", "completed_task_target", "tasks with num_repeat episodes"],
  rollout_until_finish_enough_non_dummy_tasks: ["completed_non_dummy_tasks", "completed_non_dummy_task_target", "non-dummy tasks"],
  rollout_until_all_clients_agree_sync_weight: ["agreed_clients", "active_clients", "active clients agreed"],
  rollout_until_any_client_agrees_sync_weight: ["agreed_clients", "active_clients", "active clients agreed (one is enough)"],
};

export function renderStatus(snapshot: StatusSnapshot): string {
  const { status, pool, metrics } = snapshot;
  const lines: string[] = [];
  const maxSteps = typeof status.max_steps === "number" && status.max_steps > 0 ? ` / ${status.max_steps}` : "";
  lines.push(`swarm ${snapshot.url}`);
  lines.push(`  state        ${status.engine_status}  (${status.engine_status_detail})`);
  lines.push(`  global step  ${status.global_step}${maxSteps}`);
  if (pool) {
    const method = String(pool.sample_collection_method ?? "");
    const [doneKey, targetKey, label] = targets[method] ?? ["completed_episodes", "completed_episode_target", "episodes"];
    const done = Number(pool[doneKey] ?? 0);
    const target = Number(pool[targetKey] ?? 0);
    lines.push(`  pool         ${progressBar(Number(pool.fraction ?? 0))} ${done}/${target} ${label}`);
    lines.push(`               ${method}; ${Number(pool.completed_episodes ?? 0)} episodes waiting`);
    const counters = (pool.counters ?? {}) as Record<string, number>;
    lines.push(
      `  episodes     running ${Number(pool.running_episodes ?? 0)}/${Number(pool.max_env_worker ?? 0)}, claimed ${counters.episodes_claimed ?? 0}, ended ${counters.episodes_ended ?? 0}, aborted ${counters.episodes_aborted ?? 0}, reclaimed ${counters.episodes_reclaimed ?? 0}`,
    );
  }
  const rewards = (metrics ?? []).map((entry) => entry.reward_mean ?? Number.NaN);
  if (rewards.length > 0) {
    const last = rewards[rewards.length - 1]!;
    lines.push(`  reward       ${sparkline(rewards.slice(-60))}  last ${last.toFixed(3)}`);
  }
  const running = Object.entries((pool?.running_episode_details ?? {}) as Record<string, Record<string, string>>);
  if (running.length > 0) {
    lines.push("  running episodes:");
    lines.push(`    ${"episode".padEnd(10)}${"client".padEnd(10)}${"type".padEnd(7)}${"calls".padStart(6)}${"idle s".padStart(9)}`);
    for (const [uuid, episode] of running.slice(0, 20)) {
      lines.push(
        `    ${uuid.slice(0, 8).padEnd(10)}${String(episode.client_uuid ?? "")
          .slice(0, 8)
          .padEnd(
            10,
          )}${String(episode.episode_type ?? "").padEnd(7)}${String(episode.llm_call_count ?? "").padStart(6)}${String(episode.time_since_last_activity ?? "").padStart(9)}`,
      );
    }
    if (running.length > 20) lines.push(`    ... and ${running.length - 20} more`);
  }
  // Ids, task names and details come from clients: nothing in them may act on the terminal.
  return printable(`${lines.join("\n")}\n`);
}
