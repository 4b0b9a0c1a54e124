/**
 * Text from outside (logs, client ids, task ids, model output) shown on a terminal or
 * written into a markdown file a person reads: control characters (terminal escape
 * sequences among them) become visible `\xNN` escapes instead of acting on the terminal.
 * Newlines and tabs stay. One linear pass.
 */
const controlCharacters = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

export function printable(text: string): string {
  return text.replace(controlCharacters, (character) => `\\x${character.charCodeAt(0).toString(16).padStart(2, "0")}`);
}
