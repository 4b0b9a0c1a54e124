import { describe, expect, it } from "vitest";
import { isA3rError } from "../core/errors.ts";
import { assertTransition, canTransition, isTerminalRunState, runStates, runStatusTransitions, terminalRunStates, type RunState } from "./run-status.ts";

const legal: [RunState, RunState][] = [
  ["queued", "preparing"],
  ["queued", "cancelled"],
  ["preparing", "running"],
  ["preparing", "failed"],
  ["preparing", "cancelled"],
  ["running", "recovering"],
  ["running", "succeeded"],
  ["running", "failed"],
  ["running", "timed_out"],
  ["running", "cancelled"],
  ["recovering", "running"],
  ["recovering", "failed"],
  ["recovering", "timed_out"],
  ["recovering", "cancelled"],
  ["recovering", "awaiting_approval"],
  ["awaiting_approval", "recovering"],
  ["awaiting_approval", "failed"],
  ["awaiting_approval", "timed_out"],
  ["awaiting_approval", "cancelled"],
  ["queued", "refused"],
  ["running", "stopped_early"],
  ["recovering", "stopped_early"],
];

function thrown(action: () => void): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("run status state machine", () => {
  it.each(legal)("allows %s -> %s", (from, to) => {
    expect(canTransition(from, to)).toBe(true);
    expect(() => assertTransition(from, to)).not.toThrow();
  });

  it("allows nothing but the listed transitions, checked over every pair of states", () => {
    const allowed = new Set(legal.map(([from, to]) => `${from}->${to}`));
    for (const from of runStates) {
      for (const to of runStates) {
        expect(canTransition(from, to), `${from}->${to}`).toBe(allowed.has(`${from}->${to}`));
      }
    }
  });

  it.each([
    ["queued", "running"],
    ["queued", "succeeded"],
    ["preparing", "succeeded"],
    ["preparing", "recovering"],
    ["recovering", "succeeded"],
    ["running", "queued"],
    ["running", "running"],
  ] as [RunState, RunState][])("refuses %s -> %s with STATUS_TRANSITION_ILLEGAL naming both states", (from, to) => {
    const error = thrown(() => assertTransition(from, to));
    expect(isA3rError(error, "STATUS_TRANSITION_ILLEGAL")).toBe(true);
    expect((error as Error).message).toContain(`${from} -> ${to}`);
  });

  // A finished run is never revived: a retry is a new result directory, so history stays true.
  it.each(terminalRunStates.map((state) => [state]))("gives the terminal state %s no exits", (state) => {
    expect(isTerminalRunState(state)).toBe(true);
    expect(runStatusTransitions[state]).toEqual([]);
    for (const to of runStates) {
      const error = thrown(() => assertTransition(state, to));
      expect(isA3rError(error, "STATUS_TRANSITION_ILLEGAL")).toBe(true);
      expect((error as Error).message).toContain("terminal");
    }
  });

  it("lets every live state be cancelled", () => {
    for (const state of runStates.filter((candidate) => !isTerminalRunState(candidate))) {
      expect(canTransition(state, "cancelled")).toBe(true);
    }
  });
});
