import { createLiveView } from "../cli/views/live-view.ts";
import type { DispatchRow } from "../hosts/dispatch/dispatcher.ts";

/**
 * A program for the live view's pseudo-terminal test: it shows three rounds of two runs on
 * stderr, as the leader does, deciding on a terminal or plain lines from stderr itself.
 */
const started = Date.parse("2026-11-29T10:00:00.000Z");
const row = (id: string, state: DispatchRow["state"], step: number | null, reward: number | null): DispatchRow => ({
  campaign: "c",
  blueprintId: id,
  host: "gpu-1",
  state,
  finished: state === "succeeded",
  gpuIndices: [0],
  step,
  startedAt: new Date(started).toISOString(),
  timeBudgetMs: 600_000,
  lastMetrics: reward === null ? null : { reward_mean: reward },
  note: "",
  auditErrors: state === "succeeded" ? 0 : null,
});

let round = 0;
const view = createLiveView({
  stream: process.stderr,
  tty: Boolean(process.stderr.isTTY),
  metric: "reward_mean",
  now: () => started + 60_000 * (round + 1),
  maxSteps: () => 20,
});
view.note(`leader: watch (stage 1) tty=${Boolean(process.stderr.isTTY)} columns=${process.stderr.columns ?? "none"}`);
for (const [first, second] of [
  [row("s1-lr-0.01-seed1", "running", 3, 0.21), row("s1-lr-0.1-seed1", "preparing", null, null)],
  [row("s1-lr-0.01-seed1", "running", 12, 0.43), row("s1-lr-0.1-seed1", "running", 4, 0.3)],
  [row("s1-lr-0.01-seed1", "succeeded", 20, 0.52), row("s1-lr-0.1-seed1", "running", 9, 0.35)],
] as const) {
  view.update([first, second]);
  round += 1;
}
view.note("leader: analyze (stage 1)");
view.close();
