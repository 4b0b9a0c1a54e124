import { describe, expect, it } from "vitest";
import { isMad } from "./madness.ts";

describe("isMad (AgentJet's compute_madness_checklist)", () => {
  it("nonsense: template markers, looping words or characters, and unexpected scripts", () => {
    const check = (text: string) => isMad(text, ["nonsense"], false);
    expect(check("The answer is 42 because six times seven is forty-two.")).toBe(false);
    expect(check("答案是四十二。")).toBe(false);
    expect(check("ok <|im_start|>user")).toBe(true);
    expect(check(Array.from({ length: 12 }, () => "again").join(" "))).toBe(true);
    expect(check("ab".repeat(150))).toBe(true);
    expect(check("Здравствуйте")).toBe(true);
    // Listing non_ascii too turns the script check off (AgentJet's switch reads this way).
    expect(isMad("Здравствуйте", ["nonsense", "non_ascii"], false)).toBe(false);
    expect(isMad("again ".repeat(12), [], false)).toBe(false);
  });

  it("format_type_1 and wrong_toolcall", () => {
    expect(isMad("<think>x</think>\n```python\nprint(1)\n```", ["format_type_1"], false)).toBe(false);
    expect(isMad("```python\nprint(1)\n```", ["format_type_1"], false)).toBe(true);
    expect(isMad('<tool_call>{"name": "search", "arguments": {}}</tool_call>', ["wrong_toolcall"], true)).toBe(false);
    expect(isMad("<tool_call>{name: search}</tool_call>", ["wrong_toolcall"], true)).toBe(true);
    expect(isMad("<tool_call>{name: search}", ["wrong_toolcall"], true)).toBe(true);
    expect(isMad("<tool_call>{name: search}", ["wrong_toolcall"], false)).toBe(false);
  });
});
