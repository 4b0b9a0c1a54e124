/**
 * A tiny terminal for tests of live views: it replays written text on a screen of lines
 * and keeps what a person would see. It knows what the views emit and nothing more:
 * printable text (wrapping at `columns`), \n (a pty turns it into \r\n), \r, cursor up
 * (CSI n A) and clear to the end of the screen (CSI J). Any other escape sequence throws,
 * so that a view emitting something unexpected fails its test.
 */
export function replayOnScreen(output: string, columns = 1000): string[] {
  const screen: string[] = [""];
  let row = 0;
  let column = 0;
  const put = (character: string): void => {
    if (column >= columns) {
      row += 1;
      column = 0;
    }
    while (screen.length <= row) screen.push("");
    const line = screen[row]!.padEnd(column);
    screen[row] = `${line.slice(0, column)}${character}${line.slice(column + 1)}`;
    column += 1;
  };
  for (let index = 0; index < output.length; index += 1) {
    const character = output[index]!;
    if (character === "\n") {
      row += 1;
      column = 0;
      while (screen.length <= row) screen.push("");
    } else if (character === "\r") {
      column = 0;
    } else if (character === "\x1b") {
      const match = /^\x1b\[(\d*)([AJ])/.exec(output.slice(index));
      if (!match) throw new Error(`unexpected escape sequence at ${index}: ${JSON.stringify(output.slice(index, index + 8))}`);
      if (match[2] === "A") row = Math.max(0, row - Number(match[1] || "1"));
      else {
        screen[row] = screen[row]!.slice(0, column);
        screen.length = row + 1;
      }
      index += match[0].length - 1;
    } else {
      put(character);
    }
  }
  while (screen.length > 1 && screen.at(-1) === "") screen.pop();
  return screen;
}
