import { RolloutsError } from "../errors.ts";
import { ExprError, goQuote } from "./errors.ts";

/**
 * expr-lang's lexer: the same tokens, the same literal rules (Go escapes in quoted strings, raw
 * backtick strings, `0x`/`0o`/`0b` numbers with `_`, `//` and `/* *\/` comments) and the same
 * error messages at the same positions. It works on code points, as expr's positions do.
 */

type TokenKind = "Identifier" | "Number" | "String" | "Bytes" | "Operator" | "Bracket" | "EOF";

export interface Token {
  kind: TokenKind;
  value: string;
  from: number;
  to: number;
  /** The bytes of a `b"..."` literal. */
  bytes?: Uint8Array;
}

/** Go's `Token.String()`: `Operator("+")`, `EOF`. */
export function tokenString(t: Token): string {
  return t.value === "" ? t.kind : `${t.kind}(${goQuote(t.value)})`;
}

const GO_SPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005,
  0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);

function isSpace(r: string): boolean {
  return GO_SPACE.has(r.codePointAt(0) as number);
}

const LETTER = /^\p{L}$/u;
const DIGIT = /^\p{Nd}$/u;

function isAlphabetic(r: string): boolean {
  return r === "_" || r === "$" || LETTER.test(r);
}

function isAlphaNumeric(r: string): boolean {
  return isAlphabetic(r) || DIGIT.test(r);
}

/** A name that may follow `.` even when it is an operator word (`foo.not`, `x.matches`). */
export function isValidIdentifier(s: string): boolean {
  const runes = Array.from(s);
  return runes.length > 0 && isAlphabetic(runes[0] as string) && runes.every(isAlphaNumeric);
}

const EOF_RUNE = "";

function digitVal(ch: string): number {
  if (ch >= "0" && ch <= "9") return ch.charCodeAt(0) - 48;
  const l = ch.toLowerCase();
  if (ch.length === 1 && l >= "a" && l <= "f") return l.charCodeAt(0) - 87;
  return 16;
}

/** Tokenizes the whole input; a lexing error becomes the error of the token it would have been. */
export function lex(input: string): (Token | ExprError)[] {
  const src = Array.from(input);
  const out: (Token | ExprError)[] = [];
  let start = 0;
  let end = 0;
  let eof = false;

  const next = (): string => {
    if (end >= src.length) {
      eof = true;
      return EOF_RUNE;
    }
    return src[end++] as string;
  };
  const peek = (): string => (end < src.length ? (src[end] as string) : EOF_RUNE);
  const backup = () => {
    if (eof) eof = false;
    else if (end > 0) end--;
  };
  const word = () => src.slice(start, end).join("");
  const emitValue = (kind: TokenKind, value: string, bytes?: Uint8Array) => {
    out.push({ kind, value, from: start, to: end, ...(bytes ? { bytes } : {}) });
    start = end;
  };
  const emit = (kind: TokenKind) => emitValue(kind, word());
  const accept = (valid: string): boolean => {
    const p = peek();
    if (p !== EOF_RUNE && valid.includes(p)) {
      next();
      return true;
    }
    return false;
  };
  const acceptRun = (valid: string) => {
    while (accept(valid));
  };
  class LexError extends RolloutsError {
    override readonly name = "LexError";
  }
  const error = (message: string): never => {
    let e = end;
    if (eof) e++;
    out.push(new ExprError(message, e - 1, "parse"));
    throw new LexError(message);
  };

  const scanDigits = (first: string, base: number, count: number): string => {
    let ch = first;
    let n = count;
    while (n > 0 && digitVal(ch) < base) {
      ch = next();
      n--;
    }
    if (n > 0) error("invalid char escape");
    return ch;
  };

  const scanEscape = (quote: string): string => {
    const ch = next();
    switch (ch) {
      case "a":
      case "b":
      case "f":
      case "n":
      case "r":
      case "t":
      case "v":
      case "\\":
      case quote:
        return next();
      case "0":
      case "1":
      case "2":
      case "3":
      case "4":
      case "5":
      case "6":
      case "7":
        return scanDigits(ch, 8, 3);
      case "x":
        return scanDigits(next(), 16, 2);
      case "u": {
        if (peek() === "{") {
          next();
          let digits = 0;
          for (;;) {
            const p = peek();
            if (p === "}") break;
            if (p === EOF_RUNE || digitVal(p) >= 16) error("invalid char escape");
            if (digits >= 6) error("invalid char escape");
            next();
            digits++;
          }
          if (peek() !== "}" || digits === 0) error("invalid char escape");
          next();
          return next();
        }
        return scanDigits(next(), 16, 4);
      }
      case "U":
        return scanDigits(next(), 16, 8);
      default:
        return error("invalid char escape");
    }
  };

  const scanString = (quote: string) => {
    let ch = next();
    while (ch !== quote) {
      if (ch === "\n" || ch === EOF_RUNE) error("literal not terminated");
      ch = ch === "\\" ? scanEscape(quote) : next();
    }
  };

  const scanRawString = (quote: string) => {
    let escaped = 0;
    for (;;) {
      let ch = next();
      while (ch === quote && peek() === quote) {
        next();
        ch = next();
        escaped++;
      }
      if (ch === quote) break;
      if (ch === EOF_RUNE) error("literal not terminated");
    }
    const body = src.slice(start + 1, end - 1);
    if (escaped === 0) {
      emitValue("String", body.join(""));
      return;
    }
    let value = "";
    let skipped = false;
    for (const r of body) {
      if (r === quote) {
        if (!skipped) {
          skipped = true;
          continue;
        }
        skipped = false;
      }
      value += r;
    }
    emitValue("String", value);
  };

  const scanNumber = (): boolean => {
    let digits = "0123456789_";
    if (accept("0")) {
      if (accept("xX")) digits = "0123456789abcdefABCDEF_";
      else if (accept("oO")) digits = "01234567_";
      else if (accept("bB")) digits = "01_";
    }
    acceptRun(digits);
    const before = end;
    if (accept(".")) {
      if (peek() === ".") {
        end = before;
        return true;
      }
      acceptRun(digits);
    }
    if (accept("eE")) {
      accept("+-");
      acceptRun(digits);
    }
    const p = peek();
    if (p !== EOF_RUNE && isAlphaNumeric(p)) {
      next();
      return false;
    }
    return true;
  };

  const number = () => {
    if (!scanNumber()) error(`bad number syntax: ${goQuote(word())}`);
    emit("Number");
  };

  const identifier = () => {
    for (;;) {
      const r = next();
      if (r !== EOF_RUNE && isAlphaNumeric(r)) continue;
      backup();
      const w = word();
      switch (w) {
        case "not": {
          emit("Operator");
          while (accept(" "));
          start = end;
          const after = end;
          for (;;) {
            const c = next();
            if (c === EOF_RUNE || !isAlphaNumeric(c)) {
              backup();
              break;
            }
          }
          switch (word()) {
            case "in":
            case "matches":
            case "contains":
            case "startsWith":
            case "endsWith":
              emit("Operator");
              break;
            default:
              end = after;
          }
          return;
        }
        case "in":
        case "or":
        case "and":
        case "matches":
        case "contains":
        case "startsWith":
        case "endsWith":
        case "let":
        case "if":
        case "else":
          emit("Operator");
          return;
        default:
          emit("Identifier");
          return;
      }
    }
  };

  try {
    for (;;) {
      const r = next();
      if (r === EOF_RUNE) {
        out.push({ kind: "EOF", value: "", from: Math.max(0, end - 1), to: end });
        return out;
      }
      if (isSpace(r)) {
        start = end;
        continue;
      }
      if (r === "'" || r === '"') {
        scanString(r);
        emitValue(
          "String",
          unquote(word(), (m) => error(m)),
        );
        continue;
      }
      if (r === "`") {
        scanRawString(r);
        continue;
      }
      if ((r === "b" || r === "B") && (peek() === "'" || peek() === '"')) {
        const quote = next();
        scanString(quote);
        const bytes = unescapeBytes(src.slice(start + 1, end).join(""), (m) => error(m));
        emitValue("Bytes", new TextDecoder().decode(bytes), bytes);
        continue;
      }
      if (r >= "0" && r <= "9") {
        backup();
        number();
        continue;
      }
      switch (r) {
        case "?":
          accept(".?");
          emit("Operator");
          continue;
        case "/":
          if (accept("/")) {
            for (;;) {
              const c = next();
              if (c === EOF_RUNE || c === "\n") break;
            }
            start = end;
            continue;
          }
          if (accept("*")) {
            for (;;) {
              const c = next();
              if (c === EOF_RUNE) error("unclosed comment");
              if (c === "*" && accept("/")) break;
            }
            start = end;
            continue;
          }
          emit("Operator");
          continue;
        case "#": {
          accept("#");
          emit("Operator");
          for (;;) {
            const c = next();
            if (c !== EOF_RUNE && isAlphaNumeric(c)) continue;
            backup();
            if (word() !== "") emit("Identifier");
            break;
          }
          continue;
        }
        case "|":
          accept("|");
          emit("Operator");
          continue;
        case ":":
          accept(":");
          emit("Operator");
          continue;
        case "(":
        case "[":
        case "{":
        case ")":
        case "]":
        case "}":
          emit("Bracket");
          continue;
        case ",":
        case ";":
        case "%":
        case "+":
        case "-":
        case "^":
          emit("Operator");
          continue;
        case "&":
        case "!":
        case "=":
        case "*":
        case "<":
        case ">":
          accept("&=*");
          emit("Operator");
          continue;
        case ".": {
          backup();
          next();
          if (accept("0123456789")) {
            backup();
            number();
            continue;
          }
          accept(".");
          emit("Operator");
          continue;
        }
      }
      if (isAlphaNumeric(r)) {
        backup();
        identifier();
        continue;
      }
      const cp = r.codePointAt(0) as number;
      const printable = r === " " || /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(r);
      error(
        `unrecognized character: U+${cp.toString(16).toUpperCase().padStart(4, "0")}${printable ? ` '${r}'` : ""}`,
      );
    }
  } catch (e) {
    if (e instanceof LexError) return out;
    throw e;
  }
}

const MAX_RUNE = 0x10ffff;

function unhex(c: string | undefined): number {
  if (c === undefined) return -1;
  const v = digitVal(c);
  return v < 16 ? v : -1;
}

function runeOf(v: number): string {
  return v >= 0xd800 && v <= 0xdfff ? "\ufffd" : String.fromCodePoint(v);
}

/** Go's unquoting of a `"..."` or `'...'` literal as expr's lexer does it. */
function unquote(quoted: string, fail: (message: string) => never): string {
  const value = quoted.replace(/\r\n|\r/g, "\n");
  const runes = Array.from(value);
  const n = runes.length;
  if (n < 2 || runes[0] !== runes[n - 1] || (runes[0] !== '"' && runes[0] !== "'")) {
    return fail("unable to unescape string");
  }
  const s = runes.slice(1, n - 1);
  let out = "";
  let i = 0;
  while (i < s.length) {
    const c = s[i] as string;
    if (c !== "\\") {
      out += c;
      i++;
      continue;
    }
    if (i + 1 >= s.length) fail("unable to unescape string, found '\\' as last character");
    const e = s[i + 1] as string;
    i += 2;
    const simple: Record<string, string> = {
      a: "\x07",
      b: "\b",
      f: "\f",
      n: "\n",
      r: "\r",
      t: "\t",
      v: "\v",
      "\\": "\\",
      "'": "'",
      '"': '"',
      "`": "`",
      "?": "?",
    };
    if (simple[e] !== undefined) {
      out += simple[e];
      continue;
    }
    if (e === "x" || e === "X" || e === "u" || e === "U") {
      if (e === "u" && s[i] === "{") {
        i++;
        let v = 0;
        let digits = 0;
        while (i < s.length && s[i] !== "}") {
          const x = unhex(s[i]);
          if (x < 0 || digits >= 6) fail("unable to unescape string");
          v = v * 16 + x;
          i++;
          digits++;
        }
        if (i >= s.length || s[i] !== "}" || digits === 0) fail("unable to unescape string");
        i++;
        if (v > MAX_RUNE) fail("unable to unescape string");
        out += runeOf(v);
        continue;
      }
      const width = e === "u" ? 4 : e === "U" ? 8 : 2;
      if (s.length - i < width) fail("unable to unescape string");
      let v = 0;
      for (let j = 0; j < width; j++) {
        const x = unhex(s[i + j]);
        if (x < 0) fail("unable to unescape string");
        v = v * 16 + x;
      }
      i += width;
      if (v > MAX_RUNE) fail("unable to unescape string");
      out += runeOf(v);
      continue;
    }
    if (e >= "0" && e <= "3") {
      if (s.length - i < 2) fail("unable to unescape octal sequence in string");
      let v = e.charCodeAt(0) - 48;
      for (let j = 0; j < 2; j++) {
        const x = s[i + j] as string;
        if (x < "0" || x > "7") fail("unable to unescape octal sequence in string");
        v = v * 8 + (x.charCodeAt(0) - 48);
      }
      i += 2;
      out += runeOf(v);
      continue;
    }
    fail("unable to unescape string");
  }
  return out;
}

/** Go's unquoting of a `b"..."` literal: escapes are bytes, other characters their UTF-8. */
function unescapeBytes(quoted: string, fail: (message: string) => never): Uint8Array {
  const value = quoted.replace(/\r\n|\r/g, "\n");
  const runes = Array.from(value);
  const n = runes.length;
  if (n < 2 || runes[0] !== runes[n - 1] || (runes[0] !== '"' && runes[0] !== "'")) {
    return fail("unable to unescape string");
  }
  const s = runes.slice(1, n - 1);
  const bytes: number[] = [];
  const enc = new TextEncoder();
  let i = 0;
  while (i < s.length) {
    const c = s[i] as string;
    if (c !== "\\") {
      bytes.push(...enc.encode(c));
      i++;
      continue;
    }
    if (i + 1 >= s.length) fail("unable to unescape string, found '\\' as last character");
    const e = s[i + 1] as string;
    i += 2;
    const simple: Record<string, number> = {
      a: 7,
      b: 8,
      f: 12,
      n: 10,
      r: 13,
      t: 9,
      v: 11,
      "\\": 92,
      "'": 39,
      '"': 34,
      "`": 96,
      "?": 63,
    };
    if (simple[e] !== undefined) {
      bytes.push(simple[e] as number);
      continue;
    }
    if (e === "x" || e === "X") {
      const hi = unhex(s[i]);
      const lo = unhex(s[i + 1]);
      if (hi < 0 || lo < 0) fail("unable to unescape string");
      bytes.push(hi * 16 + lo);
      i += 2;
      continue;
    }
    if (e >= "0" && e <= "3") {
      const a = s[i];
      const b = s[i + 1];
      if (a === undefined || b === undefined) fail("unable to unescape octal sequence in string");
      if ((a as string) < "0" || (a as string) > "7" || (b as string) < "0" || (b as string) > "7") {
        fail("unable to unescape octal sequence in string");
      }
      const v =
        (e.charCodeAt(0) - 48) * 64 +
        ((a as string).charCodeAt(0) - 48) * 8 +
        ((b as string).charCodeAt(0) - 48);
      if (v > 255) fail("unable to unescape string");
      bytes.push(v);
      i += 2;
      continue;
    }
    fail("unable to unescape string");
  }
  return new Uint8Array(bytes);
}
