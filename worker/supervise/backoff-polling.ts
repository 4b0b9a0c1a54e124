/**
 * The detection delay of a supervisor that looks at a run on a growing backoff instead of
 * continuously: AgentJet's A3R re-reads its tmux pane 30 s, 1, 2, 4, 8 and 16 minutes after
 * the previous look, then every 16 minutes. A failure at time t (since the watch began) is
 * noticed at the first look after t. Pure, for the benchmark that compares it with the
 * worker's measured failure-to-relaunch latency.
 */
export const agentJetBackoffMs = [30_000, 60_000, 120_000, 240_000, 480_000, 960_000];

/** Times of the looks (ms since the watch began), up to and including the first after `untilMs`. */
export function lookTimes(untilMs: number, backoffMs: readonly number[] = agentJetBackoffMs): number[] {
  const looks: number[] = [];
  let at = 0;
  for (let index = 0; at <= untilMs; index += 1) {
    at += backoffMs[Math.min(index, backoffMs.length - 1)]!;
    looks.push(at);
  }
  return looks;
}

export function backoffDetectionDelayMs(failureAtMs: number, backoffMs: readonly number[] = agentJetBackoffMs): number {
  const looks = lookTimes(failureAtMs, backoffMs);
  return looks[looks.length - 1]! - failureAtMs;
}

/** Looks (each one an LLM call reading the pane) in the first `durationMs` of a healthy run. */
export function backoffLooksWithin(durationMs: number, backoffMs: readonly number[] = agentJetBackoffMs): number {
  return lookTimes(durationMs, backoffMs).filter((at) => at <= durationMs).length;
}
