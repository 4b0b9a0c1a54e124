/**
 * The swarm engine's state machine, in one place. Every state change of the server goes
 * through `EngineStateMachine.transition`, which refuses anything not in the table.
 *
 * ```
 *            start_engine           engine loaded
 *  OFFLINE ──────────────> BOOTING ──────────────> ROLLING <─────────────────────┐
 *     ^                                              │ strategy says ready        │
 *     │ stop_engine / engine died / max_steps        v (no new claims)            │
 *     └───────────── (from any state) ───────── ROLLING_POST                      │
 *                                                    │ claimed episodes done      │
 *                                                    │ (or aborted: drain_timeout)│
 *                                                    v                            │
 *                                             WEIGHT_SYNCING ── step done ────────┤
 *                                                    │ checkpoint due             │
 *                                                    v                            │
 *                                            WEIGHT_EXPORTING ── saved ───────────┘
 * ```
 *
 * Leaving ROLLING or ROLLING_POST for anything but WEIGHT_SYNCING closes every open
 * episode (the server does that on the `closesEpisodes` flag of the transition).
 */

export const engineStates = [
  "ENGINE.OFFLINE",
  "ENGINE.BOOTING",
  "ENGINE.ROLLING",
  "ENGINE.ROLLING_POST",
  "ENGINE.WEIGHT_SYNCING",
  "ENGINE.WEIGHT_EXPORTING",
] as const;

export type EngineState = (typeof engineStates)[number];

/** What a client reports when it cannot reach the server at all (never a server state). */
export const cannotConnectState = "ENGINE.CANNOT_CONNECT";

/** Legal transitions: from → the states it may go to. */
export const legalTransitions: Readonly<Record<EngineState, readonly EngineState[]>> = {
  "ENGINE.OFFLINE": ["ENGINE.BOOTING"],
  "ENGINE.BOOTING": ["ENGINE.ROLLING", "ENGINE.OFFLINE"],
  "ENGINE.ROLLING": ["ENGINE.ROLLING_POST", "ENGINE.OFFLINE"],
  "ENGINE.ROLLING_POST": ["ENGINE.WEIGHT_SYNCING", "ENGINE.OFFLINE"],
  "ENGINE.WEIGHT_SYNCING": ["ENGINE.ROLLING", "ENGINE.WEIGHT_EXPORTING", "ENGINE.OFFLINE"],
  "ENGINE.WEIGHT_EXPORTING": ["ENGINE.ROLLING", "ENGINE.OFFLINE"],
};

export function isLegalTransition(from: EngineState, to: EngineState): boolean {
  return legalTransitions[from].includes(to);
}

/** States in which claimed episodes may be open (and talk to the model). */
export function episodesMayBeOpen(state: EngineState): boolean {
  return state === "ENGINE.ROLLING" || state === "ENGINE.ROLLING_POST";
}

export class IllegalTransitionError extends Error {
  constructor(
    readonly from: EngineState,
    readonly to: EngineState,
  ) {
    super(`illegal engine transition ${from} → ${to} (allowed from ${from}: ${legalTransitions[from].join(", ") || "none"})`);
    this.name = "IllegalTransitionError";
  }
}

export interface TransitionRecord {
  from: EngineState;
  to: EngineState;
  reason: string;
  at: number;
  /** True when open episodes must be closed because of this transition. */
  closesEpisodes: boolean;
}

export class EngineStateMachine {
  #state: EngineState = "ENGINE.OFFLINE";
  #detail = "waiting for start_engine";
  /** Bumped on every transition so async work can tell whether its state is still current. */
  #epoch = 0;
  readonly #listeners: Array<(record: TransitionRecord) => void> = [];

  get state(): EngineState {
    return this.#state;
  }

  get detail(): string {
    return this.#detail;
  }

  get epoch(): number {
    return this.#epoch;
  }

  onTransition(listener: (record: TransitionRecord) => void): void {
    this.#listeners.push(listener);
  }

  /** Moves to `to` or throws IllegalTransitionError; `reason` becomes the status detail. */
  transition(to: EngineState, reason: string, now = Date.now()): TransitionRecord {
    const from = this.#state;
    if (!isLegalTransition(from, to)) throw new IllegalTransitionError(from, to);
    const record: TransitionRecord = {
      from,
      to,
      reason,
      at: now,
      closesEpisodes: episodesMayBeOpen(from) && !episodesMayBeOpen(to) && to !== "ENGINE.WEIGHT_SYNCING",
    };
    this.#state = to;
    this.#detail = reason;
    this.#epoch += 1;
    for (const listener of this.#listeners) listener(record);
    return record;
  }

  /** Updates the human-readable detail without changing state. */
  describe(detail: string): void {
    this.#detail = detail;
  }
}
