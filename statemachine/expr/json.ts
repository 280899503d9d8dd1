import { RolloutsError } from "../errors.ts";
import { goQuote } from "./errors.ts";

/**
 * The syntax errors Go's `encoding/json` reports, so `fromJSON` fails with Go's message
 * (`invalid character 'x' looking for beginning of value`, `unexpected end of JSON input`).
 * Returns undefined for valid JSON.
 */
export function goJSONSyntaxError(input: string): string | undefined {
  const s = Array.from(input);
  let i = 0;
  class Fail extends RolloutsError {
    override readonly name = "JsonSyntaxError";
  }
  let message = "";
  const fail = (m: string): never => {
    message = m;
    throw new Fail(m);
  };
  const quoteChar = (c: string): string => {
    if (c === "'") return "'\\''";
    if (c === '"') return `'"'`;
    const q = goQuote(c);
    return `'${q.slice(1, -1)}'`;
  };
  const bad = (context: string): never => fail(`invalid character ${quoteChar(s[i] as string)} ${context}`);
  const end = () => i >= s.length;
  const space = () => {
    while (!end() && " \t\r\n".includes(s[i] as string)) i++;
  };
  const need = (context: string): string => {
    if (end()) fail("unexpected end of JSON input");
    void context;
    return s[i] as string;
  };
  const digit = (c: string | undefined) => c !== undefined && c >= "0" && c <= "9";
  const value = (): void => {
    space();
    const c = need("looking for beginning of value");
    if (c === "{") {
      i++;
      space();
      if (need("") === "}") {
        i++;
        return;
      }
      for (;;) {
        space();
        if (need("") !== '"') bad("looking for beginning of object key string");
        string();
        space();
        if (need("") !== ":") bad("after object key");
        i++;
        value();
        space();
        const d = need("");
        if (d === ",") {
          i++;
          continue;
        }
        if (d === "}") {
          i++;
          return;
        }
        bad("after object key:value pair");
      }
    }
    if (c === "[") {
      i++;
      space();
      if (need("") === "]") {
        i++;
        return;
      }
      for (;;) {
        value();
        space();
        const d = need("");
        if (d === ",") {
          i++;
          continue;
        }
        if (d === "]") {
          i++;
          return;
        }
        bad("after array element");
      }
    }
    if (c === '"') {
      string();
      return;
    }
    if (c === "-" || digit(c)) {
      number();
      return;
    }
    for (const lit of ["true", "false", "null"]) {
      if (c === lit[0]) {
        i++;
        for (const expected of lit.slice(1)) {
          if (end()) fail("unexpected end of JSON input");
          if (s[i] !== expected) bad(`in literal ${lit} (expecting ${quoteChar(expected)})`);
          i++;
        }
        return;
      }
    }
    bad("looking for beginning of value");
  };
  const string = (): void => {
    i++;
    for (;;) {
      const c = need("");
      if (c === '"') {
        i++;
        return;
      }
      if (c === "\\") {
        i++;
        const e = need("");
        if (e === "u") {
          i++;
          for (let k = 0; k < 4; k++) {
            const h = need("");
            if (!/[0-9a-fA-F]/.test(h)) bad("in \\u hexadecimal character escape");
            i++;
          }
          continue;
        }
        if (!'"\\/bfnrt'.includes(e)) bad("in string escape code");
        i++;
        continue;
      }
      if ((c.codePointAt(0) as number) < 0x20) bad("in string literal");
      i++;
    }
  };
  const number = (): void => {
    if (s[i] === "-") {
      i++;
      if (end()) fail("unexpected end of JSON input");
      if (!digit(s[i])) bad("in numeric literal");
    }
    if (s[i] === "0") i++;
    else while (digit(s[i])) i++;
    if (s[i] === ".") {
      i++;
      if (end()) fail("unexpected end of JSON input");
      if (!digit(s[i])) bad("after decimal point in numeric literal");
      while (digit(s[i])) i++;
    }
    if (s[i] === "e" || s[i] === "E") {
      i++;
      if (s[i] === "+" || s[i] === "-") i++;
      if (end()) fail("unexpected end of JSON input");
      if (!digit(s[i])) bad("in exponent of numeric literal");
      while (digit(s[i])) i++;
    }
  };
  try {
    value();
    space();
    if (!end()) bad("after top-level value");
    return undefined;
  } catch (e) {
    if (e instanceof Fail) return message;
    throw e;
  }
}
