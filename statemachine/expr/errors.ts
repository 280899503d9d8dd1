import { RolloutsError } from "../errors.ts";
/**
 * An expression that cannot be parsed, checked or run. `message` is expr-lang's message (what Argo
 * Rollouts reports, without position); `format()` adds `(line:column)` and a caret under the
 * source line the way expr's `file.Error` prints itself.
 */
export class ExprError extends RolloutsError {
  override name = "ExprError";
  constructor(
    message: string,
    /** Offset in code points where the problem is (expr's `Location.From`); -1 when unknown. */
    readonly from: number,
    /** Which stage refused it: a syntax error, a type error, or a failure while running. */
    readonly stage: "parse" | "check" | "run",
  ) {
    super(message);
  }

  /** expr's `Error()`: the message, then ` (line:column)` and the source line with a caret. */
  format(source: string): string {
    if (this.from < 0) return this.message;
    const runes = Array.from(source);
    let line = 1;
    let column = 0;
    let lineStart = 0;
    for (let i = 0; i < runes.length && i < this.from; i++) {
      if (runes[i] === "\n") {
        line++;
        column = 0;
        lineStart = i + 1;
      } else column++;
    }
    let lineEnd = runes.indexOf("\n", lineStart);
    if (lineEnd < 0) lineEnd = runes.length;
    if (lineEnd === lineStart) return this.message;
    const text = runes.slice(lineStart, lineEnd).join("").replace(/\t/g, " ");
    return `${this.message} (${line}:${column + 1})\n | ${text}\n | ${".".repeat(column)}^`;
  }
}

/** Go's `%#v` of a string (used in "unexpected token String(\"x\")"). */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0) as number;
    switch (ch) {
      case '"':
        out += '\\"';
        continue;
      case "\\":
        out += "\\\\";
        continue;
      case "\n":
        out += "\\n";
        continue;
      case "\t":
        out += "\\t";
        continue;
      case "\r":
        out += "\\r";
        continue;
      case "\x07":
        out += "\\a";
        continue;
      case "\b":
        out += "\\b";
        continue;
      case "\f":
        out += "\\f";
        continue;
      case "\v":
        out += "\\v";
        continue;
    }
    if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, "0")}`;
    else if (cp >= 0x80 && cp < 0xa0) out += `\\u${cp.toString(16).padStart(4, "0")}`;
    else if (cp === 0xfffd || (cp >= 0xd800 && cp <= 0xdfff)) out += `\\u${cp.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}
