import { describe, expect, it } from "vitest";
import { CollectingStream } from "../test-support/collecting-stream.ts";
import { replayOnScreen } from "../test-support/terminal-screen.ts";
import { capHeight, createTerminalFrame, eraseUp, fitToWidth, printableLine, terminalColumns } from "./terminal-frame.ts";

describe("terminal frame", () => {
  it("redraws in place: each frame moves up over exactly the previous frame's rows", () => {
    const stream = new CollectingStream();
    const frame = createTerminalFrame({ stream, columns: 40 });
    frame.draw("a\nb\nc");
    frame.draw("d\ne");
    frame.draw("f");
    expect(stream.chunks).toEqual(["a\nb\nc\n", `${eraseUp(3)}d\ne\n`, `${eraseUp(2)}f\n`]);
    expect(eraseUp(3)).toBe("\x1b[3A\r\x1b[J");
    expect(replayOnScreen(stream.text)).toEqual(["f"]);
  });

  it("writes notes above the frame, which stays whole below them", () => {
    const stream = new CollectingStream();
    const frame = createTerminalFrame({ stream, columns: 40 });
    frame.note("before any frame");
    frame.draw("table 1\nrow");
    frame.note("leader: watch (stage 1)");
    frame.draw("table 2\nrow");
    expect(replayOnScreen(stream.text)).toEqual(["before any frame", "leader: watch (stage 1)", "table 2", "row"]);
  });

  it("cuts lines to the terminal width and keeps the frame within its height", () => {
    const stream = new CollectingStream();
    const frame = createTerminalFrame({ stream, columns: 10, rows: 4 });
    frame.draw("0123456789abcdef\n2\n3\n4\n5");
    const lines = stream.text.split("\n").slice(0, -1);
    expect(lines[0]).toBe("012345678…");
    expect(lines).toHaveLength(3); // one row is left for the cursor
    expect(lines[2]).toMatch(/^… 3 more/);
  });

  it("reads the width from the stream at every draw, and counts rows a narrowed terminal wraps", () => {
    const stream = new CollectingStream();
    stream.columns = 20;
    const frame = createTerminalFrame({ stream });
    frame.draw("x".repeat(30));
    expect(stream.chunks[0]).toBe(`${"x".repeat(19)}…\n`);
    stream.columns = 8; // the 20-wide line now wraps over three rows
    frame.draw("y");
    expect(stream.chunks[1]!.startsWith(eraseUp(3))).toBe(true);
    expect(replayOnScreen(stream.text, 8)).toEqual(["y"]);
  });

  it("draws 80 columns wide when the terminal reports no width (a pty without a size says 0)", () => {
    const stream = new CollectingStream();
    stream.columns = 0;
    expect(terminalColumns(stream)).toBe(80);
    expect(terminalColumns(stream, 33)).toBe(33);
    createTerminalFrame({ stream }).draw("z".repeat(100));
    expect(stream.text).toBe(`${"z".repeat(79)}…\n`);
  });

  it("keeps the last frame on close; later notes are plain lines and later draws do nothing", () => {
    const stream = new CollectingStream();
    const frame = createTerminalFrame({ stream, columns: 40 });
    frame.draw("final");
    frame.close();
    frame.draw("ignored");
    frame.note("done");
    expect(stream.text).toBe("final\ndone\n");
  });

  it("removes what would move the cursor behind its back", () => {
    expect(printableLine("a\rb\x1b[2Kc\td\x07")).toBe("abc  d");
    expect(fitToWidth("héllo", 5)).toBe("héllo");
    expect(fitToWidth("héllo!", 5)).toBe("héll…");
    expect(capHeight(["a", "b"], 2)).toEqual(["a", "b"]);
  });
});
