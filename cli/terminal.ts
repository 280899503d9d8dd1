/**
 * Text that did not come from this program — an abort reason someone typed, an event message, a
 * measurement's value, a provider's error message, a name in a file — made safe to print on a
 * terminal. Such text can carry escape sequences that move the cursor, clear the screen, retitle
 * the window, write a hyperlink or, on some terminals, answer back: a status view must show what
 * the store holds, not let it redraw the screen. One helper, used wherever the CLI prints text
 * from the store, a provider or an input file.
 */

/** CSI (`ESC [` or the 8-bit `0x9B`): parameters, intermediates, a final byte. Colours, cursor moves, clears. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is what this file is for
const CSI = /(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]/g;
/** OSC (`ESC ]` or `0x9D`) up to BEL or ST: window titles, hyperlinks, clipboard writes. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is what this file is for
const OSC = /(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?/g;
/** DCS, SOS, PM and APC strings (`ESC P`, `ESC X`, `ESC ^`, `ESC _`, or their 8-bit forms) up to ST. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is what this file is for
const STRING = /(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\|\x9c)?/g;
/** Any other escape sequence: intermediates, then a final byte (`ESC c` resets the terminal). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is what this file is for
const ESCAPE = /\x1b[ -/]*[0-~]?/g;
/** What is left of C0 (but tab and line feed), DEL and C1. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is what this file is for
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/**
 * `text` without escape sequences and control characters. By default the result is one line
 * (a table cell, a field, an event): line breaks and tabs become spaces. With `multiline`, line
 * feeds and tabs are kept where a line break is meant (a carriage return never is: it would let
 * a later line overwrite an earlier one).
 */
export function printable(text: string, options: { multiline?: boolean } = {}): string {
  const stripped = text
    .replace(OSC, "")
    .replace(STRING, "")
    .replace(CSI, "")
    .replace(ESCAPE, "")
    .replace(/\r\n/g, "\n");
  if (options.multiline) return stripped.replace(/\r/g, "").replace(CONTROL, "");
  return stripped.replace(/[\n\t\r]/g, " ").replace(CONTROL, "");
}

/**
 * JSON for a terminal: `JSON.stringify` already escapes C0, but not DEL or C1 (`0x9B` is a CSI on
 * some terminals); they are written as `\u00XX` escapes, so the JSON means the same and prints safely.
 */
export function printableJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(
    /[\x7f-\x9f]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
