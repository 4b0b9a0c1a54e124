import { describe, expect, it } from "vitest";
import { LineSplitter } from "./line-splitter.ts";

function split(chunks: Array<string | Buffer>, maxLineChars?: number, end = true) {
  const splitter = new LineSplitter(maxLineChars);
  const lines: string[] = [];
  const sink = (line: string) => lines.push(line);
  for (const chunk of chunks) splitter.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk), sink);
  if (end) splitter.end(sink);
  return { lines, stats: splitter.stats };
}

describe("LineSplitter", () => {
  it("ends lines at \\n, \\r\\n and a lone \\r, across chunks, and skips empty ones", () => {
    expect(split(["a\nb\r\nc\rd", "\r", "\ne\r\r\rf"]).lines).toEqual(["a", "b", "c", "d", "e", "f"]);
    expect(split(["half", " line"], undefined, false).lines).toEqual([]);
  });

  it("decodes UTF-8 split between chunks", () => {
    const bytes = Buffer.from("█ step\n");
    expect(split([bytes.subarray(0, 2), bytes.subarray(2)]).lines).toEqual(["█ step"]);
  });

  it("cuts a line over the cap, keeps its start and end, counts it, and reads the next lines", () => {
    const long = `start${"x".repeat(10_000)}end`;
    const { lines, stats } = split([long.slice(0, 3000), long.slice(3000), "\nnext\n"], 100);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^startx{45} … x{47}end$/);
    expect(lines[1]).toBe("next");
    expect(stats).toEqual({ longLines: 1, longestLine: long.length, droppedChars: long.length - 100 });
  });

  it("keeps memory bounded on output with no line end at all", () => {
    const splitter = new LineSplitter(1000);
    for (let index = 0; index < 100; index += 1) splitter.push(Buffer.alloc(100_000, 0xff), () => {});
    const lines: string[] = [];
    splitter.end((line) => lines.push(line));
    expect(lines).toHaveLength(1);
    expect(lines[0]!.length).toBeLessThan(1010);
    expect(splitter.stats.longestLine).toBe(10_000_000);
  });
});
