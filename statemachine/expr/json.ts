import { RolloutsError } from "../errors.ts";
import { goQuote } from "./errors.ts";

/** The error that ends a syntax check, with Go's message. */
class JsonSyntaxError extends RolloutsError {
  override readonly name = "JsonSyntaxError";
}

/**
 * The syntax errors Go's `encoding/json` reports, so `fromJSON` fails with Go's message
 * (`invalid character 'x' looking for beginning of value`, `unexpected end of JSON input`).
 * Returns undefined for valid JSON.
 */
export function goJSONSyntaxError(input: string): string | undefined {
  try {
    new JsonSyntax(input).document();
    return undefined;
  } catch (e) {
    if (e instanceof JsonSyntaxError) return e.message;
    throw e;
  }
}

/** A character as Go's `quoteChar` puts it in a message: `'x'`, `'\''`, `'"'`, `'\n'`. */
function quoteChar(c: string): string {
  if (c === "'") return "'\\''";
  if (c === '"') return `'"'`;
  const q = goQuote(c);
  return `'${q.slice(1, -1)}'`;
}

function digit(c: string | undefined): boolean {
  return c !== undefined && c >= "0" && c <= "9";
}

/**
 * A check of JSON's syntax over the input's code points in the order Go's scanner reads it, one
 * method per kind of value, so that the first error found is the one Go reports.
 */
class JsonSyntax {
  private readonly s: string[];
  private i = 0;

  constructor(input: string) {
    this.s = Array.from(input);
  }

  /** One value and nothing after it but spaces. */
  document(): void {
    this.value();
    this.space();
    if (!this.end()) this.bad("after top-level value");
  }

  private fail(message: string): never {
    throw new JsonSyntaxError(message);
  }

  /** Fails at the current character, saying what the scanner was reading (`in string literal`). */
  private bad(context: string): never {
    return this.fail(`invalid character ${quoteChar(this.s[this.i] as string)} ${context}`);
  }

  private end(): boolean {
    return this.i >= this.s.length;
  }

  private space(): void {
    while (!this.end() && " \t\r\n".includes(this.s[this.i] as string)) this.i++;
  }

  /** The current character, which the input must still have. */
  private need(): string {
    if (this.end()) this.fail("unexpected end of JSON input");
    return this.s[this.i] as string;
  }

  /** A value of any kind, after spaces, chosen by its first character. */
  private value(): void {
    this.space();
    const c = this.need();
    if (c === "{") this.object();
    else if (c === "[") this.array();
    else if (c === '"') this.string();
    else if (c === "-" || digit(c)) this.number();
    else this.literal(c);
  }

  /** `{"key": value, ...}`: string keys, each with a colon and a value. */
  private object(): void {
    this.i++;
    this.space();
    if (this.need() === "}") {
      this.i++;
      return;
    }
    for (;;) {
      this.space();
      if (this.need() !== '"') this.bad("looking for beginning of object key string");
      this.string();
      this.space();
      if (this.need() !== ":") this.bad("after object key");
      this.i++;
      this.value();
      this.space();
      const d = this.need();
      if (d === ",") {
        this.i++;
        continue;
      }
      if (d === "}") {
        this.i++;
        return;
      }
      this.bad("after object key:value pair");
    }
  }

  /** `[value, ...]`. */
  private array(): void {
    this.i++;
    this.space();
    if (this.need() === "]") {
      this.i++;
      return;
    }
    for (;;) {
      this.value();
      this.space();
      const d = this.need();
      if (d === ",") {
        this.i++;
        continue;
      }
      if (d === "]") {
        this.i++;
        return;
      }
      this.bad("after array element");
    }
  }

  /** `true`, `false` or `null`, starting with `c`; any other character begins no value. */
  private literal(c: string): void {
    for (const lit of ["true", "false", "null"]) {
      if (c === lit[0]) {
        this.i++;
        for (const expected of lit.slice(1)) {
          if (this.end()) this.fail("unexpected end of JSON input");
          if (this.s[this.i] !== expected) this.bad(`in literal ${lit} (expecting ${quoteChar(expected)})`);
          this.i++;
        }
        return;
      }
    }
    this.bad("looking for beginning of value");
  }

  /** `"..."`: JSON's escapes, and no control characters. */
  private string(): void {
    this.i++;
    for (;;) {
      const c = this.need();
      if (c === '"') {
        this.i++;
        return;
      }
      if (c === "\\") {
        this.i++;
        const e = this.need();
        if (e === "u") {
          this.i++;
          for (let k = 0; k < 4; k++) {
            const h = this.need();
            if (!/[0-9a-fA-F]/.test(h)) this.bad("in \\u hexadecimal character escape");
            this.i++;
          }
          continue;
        }
        if (!'"\\/bfnrt'.includes(e)) this.bad("in string escape code");
        this.i++;
        continue;
      }
      if ((c.codePointAt(0) as number) < 0x20) this.bad("in string literal");
      this.i++;
    }
  }

  /** A number: a sign, no leading zeros, a fraction and an exponent that each need digits. */
  private number(): void {
    const s = this.s;
    if (s[this.i] === "-") {
      this.i++;
      if (this.end()) this.fail("unexpected end of JSON input");
      if (!digit(s[this.i])) this.bad("in numeric literal");
    }
    if (s[this.i] === "0") this.i++;
    else while (digit(s[this.i])) this.i++;
    if (s[this.i] === ".") {
      this.i++;
      if (this.end()) this.fail("unexpected end of JSON input");
      if (!digit(s[this.i])) this.bad("after decimal point in numeric literal");
      while (digit(s[this.i])) this.i++;
    }
    if (s[this.i] === "e" || s[this.i] === "E") {
      this.i++;
      if (s[this.i] === "+" || s[this.i] === "-") this.i++;
      if (this.end()) this.fail("unexpected end of JSON input");
      if (!digit(s[this.i])) this.bad("in exponent of numeric literal");
      while (digit(s[this.i])) this.i++;
    }
  }
}
