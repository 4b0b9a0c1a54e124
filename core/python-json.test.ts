import { describe, expect, it } from "vitest";
import { parsePythonJson, stringifyPythonJson } from "./python-json.ts";

describe("Python's JSON (NaN, Infinity, -Infinity)", () => {
  it("reads the bare tokens json.dumps writes, and leaves strings alone", () => {
    const parsed = parsePythonJson('{"step": 3, "loss": NaN, "up": Infinity, "down": -Infinity, "note": "NaN and Infinity \\" stay text"}') as Record<
      string,
      unknown
    >;
    expect(parsed.step).toBe(3);
    expect(parsed.loss).toBeNaN();
    expect(parsed.up).toBe(Number.POSITIVE_INFINITY);
    expect(parsed.down).toBe(Number.NEGATIVE_INFINITY);
    expect(parsed.note).toBe('NaN and Infinity " stay text');
  });

  it("refuses what is not JSON, as JSON.parse does", () => {
    expect(() => parsePythonJson('{"loss": nan}')).toThrow();
    expect(() => parsePythonJson('{"loss": NaNa}')).toThrow();
  });

  it("writes non-finite numbers back as Python does, and reads them again", () => {
    const text = stringifyPythonJson({ step: 1, loss: Number.NaN, up: Number.POSITIVE_INFINITY, down: Number.NEGATIVE_INFINITY, reward: 0.5 });
    expect(text).toBe('{"step":1,"loss":NaN,"up":Infinity,"down":-Infinity,"reward":0.5}');
    const back = parsePythonJson(text) as Record<string, number>;
    expect(back.loss).toBeNaN();
    expect(back.down).toBe(Number.NEGATIVE_INFINITY);
    expect(stringifyPythonJson({ a: 1 })).toBe('{"a":1}');
  });
});
