import { describe, expect, it } from "vitest";
import { A3rError, errorCatalogue, isA3rError } from "./errors.ts";

describe("A3rError", () => {
  it("takes retryability from the catalogue, not from the message", () => {
    expect(new A3rError("LLM_RATE_LIMITED", "slow down").retryable).toBe(true);
    expect(new A3rError("FILE_NOT_FOUND", "rate limit exceeded").retryable).toBe(false);
  });

  it("survives JSON with its code, hint and place", () => {
    const error = new A3rError("YAML_INVALID", "bad indentation", { where: "a.md:3", hint: "indent with spaces" });
    const copy = JSON.parse(JSON.stringify(error)) as Record<string, unknown>;
    expect(copy).toEqual({ code: "YAML_INVALID", message: "bad indentation", retryable: false, where: "a.md:3", hint: "indent with spaces" });
    expect(isA3rError(error, "YAML_INVALID")).toBe(true);
    expect(isA3rError(new Error("x"))).toBe(false);
  });

  it("has a stable, upper-case code for every entry", () => {
    for (const code of Object.keys(errorCatalogue)) expect(code).toMatch(/^[A-Z][A-Z_]+$/);
  });
});
