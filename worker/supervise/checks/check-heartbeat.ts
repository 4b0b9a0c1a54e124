import type { SupervisionCheck } from "../supervision-check.ts";

/**
 * Keeps the lease alive: a heartbeat (step and last metrics in status.json) every heartbeat
 * interval, and sooner (at most once a second) when this poll recorded a new step.
 * Decides nothing.
 */
export const heartbeatCheck: SupervisionCheck = {
  name: "heartbeat",
  start: (watch) => async () => {
    const fresh = watch.freshThisPoll;
    await watch.heartbeat(fresh.length > 0 && watch.now() - watch.lastHeartbeatAt >= Math.min(1000, watch.options.settings.heartbeatIntervalMs));
    return undefined;
  },
};
