import { describe, expect, it } from "vitest";
import { EngineStateMachine, IllegalTransitionError, engineStates, legalTransitions } from "./engine-state.ts";

describe("EngineStateMachine", () => {
  it("walks one full training step", () => {
    const machine = new EngineStateMachine();
    const seen: string[] = [];
    machine.onTransition((record) => seen.push(`${record.to}${record.closesEpisodes ? " (closes)" : ""}`));
    machine.transition("ENGINE.BOOTING", "loading");
    machine.transition("ENGINE.ROLLING", "ready");
    machine.transition("ENGINE.ROLLING_POST", "pool ready");
    machine.transition("ENGINE.WEIGHT_SYNCING", "training");
    machine.transition("ENGINE.WEIGHT_EXPORTING", "saving");
    machine.transition("ENGINE.ROLLING", "step 1");
    expect(seen).toEqual(["ENGINE.BOOTING", "ENGINE.ROLLING", "ENGINE.ROLLING_POST", "ENGINE.WEIGHT_SYNCING", "ENGINE.WEIGHT_EXPORTING", "ENGINE.ROLLING"]);
    expect(machine.detail).toBe("step 1");
    expect(machine.epoch).toBe(6);
  });

  it("refuses transitions not in the table and keeps its state", () => {
    const machine = new EngineStateMachine();
    expect(() => machine.transition("ENGINE.ROLLING", "skip boot")).toThrow(IllegalTransitionError);
    expect(machine.state).toBe("ENGINE.OFFLINE");
    machine.transition("ENGINE.BOOTING", "x");
    machine.transition("ENGINE.ROLLING", "x");
    expect(() => machine.transition("ENGINE.WEIGHT_SYNCING", "skip drain")).toThrow(/ROLLING → ENGINE.WEIGHT_SYNCING/);
  });

  it("closes episodes only when leaving the rolling states for a non-training state", () => {
    const machine = new EngineStateMachine();
    machine.transition("ENGINE.BOOTING", "x");
    machine.transition("ENGINE.ROLLING", "x");
    expect(machine.transition("ENGINE.ROLLING_POST", "x").closesEpisodes).toBe(false);
    expect(machine.transition("ENGINE.OFFLINE", "stop").closesEpisodes).toBe(true);
  });

  it("lets every state reach OFFLINE except OFFLINE itself", () => {
    for (const state of engineStates) {
      expect(legalTransitions[state].includes("ENGINE.OFFLINE")).toBe(state !== "ENGINE.OFFLINE");
    }
  });
});
