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

/** The error that ends lexing; the ExprError it stands for is already the last entry of the output. */
class LexError extends RolloutsError {
  override readonly name = "LexError";
}

/** The words that are operators; every other word is an identifier (`not` has its own scanner). */
const OPERATOR_WORDS = new Set([
  "in",
  "or",
  "and",
  "matches",
  "contains",
  "startsWith",
  "endsWith",
  "let",
  "if",
  "else",
]);

/** The operators a `not` before them joins into one token: `not in`, `not matches`. */
const NEGATABLE = new Set(["in", "matches", "contains", "startsWith", "endsWith"]);

/** Tokenizes the whole input; a lexing error becomes the error of the token it would have been. */
export function lex(input: string): (Token | ExprError)[] {
  return new Lexer(input).run();
}

/**
 * expr's lexer state over the input's code points: the current token runs from `start` to `end`.
 * Each kind of token has its own scanner, chosen by the token's first rune in expr's order.
 */
class Lexer {
  private readonly src: string[];
  private readonly out: (Token | ExprError)[] = [];
  private start = 0;
  private end = 0;
  private eof = false;
  /** `error` as the callback the literal unquoting fails through, made once per input. */
  private readonly fail = (message: string): never => this.error(message);

  constructor(input: string) {
    this.src = Array.from(input);
  }

  /** All the tokens and the closing EOF, or the tokens before the first error and that error. */
  run(): (Token | ExprError)[] {
    try {
      for (;;) {
        const r = this.next();
        if (r === EOF_RUNE) {
          this.out.push({ kind: "EOF", value: "", from: Math.max(0, this.end - 1), to: this.end });
          return this.out;
        }
        this.token(r);
      }
    } catch (e) {
      if (e instanceof LexError) return this.out;
      throw e;
    }
  }

  /** The next rune, or EOF_RUNE at the end of the input (remembered, so that `backup` keeps the end). */
  private next(): string {
    if (this.end >= this.src.length) {
      this.eof = true;
      return EOF_RUNE;
    }
    return this.src[this.end++] as string;
  }

  /** The next rune, left unread. */
  private peek(): string {
    return this.end < this.src.length ? (this.src[this.end] as string) : EOF_RUNE;
  }

  /** Unreads the last rune read. */
  private backup(): void {
    if (this.eof) this.eof = false;
    else if (this.end > 0) this.end--;
  }

  /** The current token's text. */
  private word(): string {
    return this.src.slice(this.start, this.end).join("");
  }

  /** Ends the current token as a token of `kind` with `value`; the next one starts after it. */
  private emitValue(kind: TokenKind, value: string, bytes?: Uint8Array): void {
    this.out.push({ kind, value, from: this.start, to: this.end, ...(bytes ? { bytes } : {}) });
    this.start = this.end;
  }

  /** Ends the current token as a token of `kind` whose value is its text. */
  private emit(kind: TokenKind): void {
    this.emitValue(kind, this.word());
  }

  /** Reads the next rune when it is one of `valid`. */
  private accept(valid: string): boolean {
    const p = this.peek();
    if (p !== EOF_RUNE && valid.includes(p)) {
      this.next();
      return true;
    }
    return false;
  }

  /** Reads the runes ahead for as long as they are among `valid`. */
  private acceptRun(valid: string): void {
    while (this.accept(valid));
  }

  /** Reads a run of letters, digits, `_` and `$`, and leaves the rune after it unread. */
  private acceptAlphaNumerics(): void {
    for (;;) {
      const c = this.next();
      if (c === EOF_RUNE || !isAlphaNumeric(c)) {
        this.backup();
        return;
      }
    }
  }

  /** Ends lexing with `message` at the current rune, as expr reports a lexing error. */
  private error(message: string): never {
    let e = this.end;
    if (this.eof) e++;
    this.out.push(new ExprError(message, e - 1, "parse"));
    throw new LexError(message);
  }

  /** What starts with rune `r`: a space or a comment, skipped, or a token, each by its own scanner. */
  private token(r: string): void {
    if (isSpace(r)) {
      this.start = this.end;
      return;
    }
    if (r === "'" || r === '"') {
      this.quoted(r);
      return;
    }
    if (r === "`") {
      this.scanRawString(r);
      return;
    }
    if ((r === "b" || r === "B") && (this.peek() === "'" || this.peek() === '"')) {
      this.bytes();
      return;
    }
    if (r >= "0" && r <= "9") {
      this.backup();
      this.number();
      return;
    }
    if (this.punctuation(r)) return;
    if (isAlphaNumeric(r)) {
      this.backup();
      this.identifier();
      return;
    }
    this.unrecognized(r);
  }

  /**
   * The operators and brackets, and the comments that also start with `/`: false when `r` starts
   * none of them, so that it may start an identifier.
   */
  private punctuation(r: string): boolean {
    switch (r) {
      case "?":
        this.accept(".?");
        this.emit("Operator");
        return true;
      case "/":
        this.slash();
        return true;
      case "#":
        this.pointer();
        return true;
      case "|":
      case ":":
        this.accept(r);
        this.emit("Operator");
        return true;
      case "(":
      case "[":
      case "{":
      case ")":
      case "]":
      case "}":
        this.emit("Bracket");
        return true;
      case ",":
      case ";":
      case "%":
      case "+":
      case "-":
      case "^":
        this.emit("Operator");
        return true;
      case "&":
      case "!":
      case "=":
      case "*":
      case "<":
      case ">":
        this.accept("&=*");
        this.emit("Operator");
        return true;
      case ".":
        this.dot();
        return true;
      default:
        return false;
    }
  }

  /** After `/`: a `//` comment to the end of the line, a `/* *\/` comment, or the division operator. */
  private slash(): void {
    if (this.accept("/")) {
      for (;;) {
        const c = this.next();
        if (c === EOF_RUNE || c === "\n") break;
      }
      this.start = this.end;
    } else if (this.accept("*")) {
      for (;;) {
        const c = this.next();
        if (c === EOF_RUNE) this.error("unclosed comment");
        if (c === "*" && this.accept("/")) break;
      }
      this.start = this.end;
    } else {
      this.emit("Operator");
    }
  }

  /** `#` or `##`, a predicate's pointer, then the name after it (`#index`), if any, as an identifier. */
  private pointer(): void {
    this.accept("#");
    this.emit("Operator");
    this.acceptAlphaNumerics();
    if (this.word() !== "") this.emit("Identifier");
  }

  /** After `.`: a number when a digit follows (`.5`), otherwise the `.` or `..` operator. */
  private dot(): void {
    if (this.accept("0123456789")) {
      this.backup();
      this.number();
      return;
    }
    this.accept(".");
    this.emit("Operator");
  }

  /** A word: an operator word (`in`, `and`, `let`), `not` and what it negates, or an identifier. */
  private identifier(): void {
    this.acceptAlphaNumerics();
    const w = this.word();
    if (w === "not") this.negation();
    else this.emit(OPERATOR_WORDS.has(w) ? "Operator" : "Identifier");
  }

  /**
   * `not`, then the operator it negates (`in`, `matches`...) after any spaces, as a token of its
   * own; when none follows, lexing goes on after the spaces.
   */
  private negation(): void {
    this.emit("Operator");
    while (this.accept(" "));
    this.start = this.end;
    const after = this.end;
    this.acceptAlphaNumerics();
    if (NEGATABLE.has(this.word())) this.emit("Operator");
    else this.end = after;
  }

  /** A number: its syntax checked as expr's lexer checks it, its value parsed later. */
  private number(): void {
    if (!this.scanNumber()) this.error(`bad number syntax: ${goQuote(this.word())}`);
    this.emit("Number");
  }

  /** Reads a number's runes: false when a letter or digit follows what a number may hold. */
  private scanNumber(): boolean {
    let digits = "0123456789_";
    if (this.accept("0")) {
      if (this.accept("xX")) digits = "0123456789abcdefABCDEF_";
      else if (this.accept("oO")) digits = "01234567_";
      else if (this.accept("bB")) digits = "01_";
    }
    this.acceptRun(digits);
    const before = this.end;
    if (this.accept(".")) {
      if (this.peek() === ".") {
        this.end = before;
        return true;
      }
      this.acceptRun(digits);
    }
    if (this.accept("eE")) {
      this.accept("+-");
      this.acceptRun(digits);
    }
    const p = this.peek();
    if (p !== EOF_RUNE && isAlphaNumeric(p)) {
      this.next();
      return false;
    }
    return true;
  }

  /** A `"..."` or `'...'` literal: a String token with its escapes unquoted. */
  private quoted(quote: string): void {
    this.scanString(quote);
    this.emitValue("String", unquote(this.word(), this.fail));
  }

  /** A `b"..."` or `b'...'` literal: a Bytes token, its value the bytes read as UTF-8. */
  private bytes(): void {
    const quote = this.next();
    this.scanString(quote);
    const bytes = unescapeBytes(this.src.slice(this.start + 1, this.end).join(""), this.fail);
    this.emitValue("Bytes", new TextDecoder().decode(bytes), bytes);
  }

  /** Reads a quoted literal to its closing quote, checking its escapes; it may not span lines. */
  private scanString(quote: string): void {
    let ch = this.next();
    while (ch !== quote) {
      if (ch === "\n" || ch === EOF_RUNE) this.error("literal not terminated");
      ch = ch === "\\" ? this.scanEscape(quote) : this.next();
    }
  }

  /** Checks the escape after a `\` and returns the rune after it. */
  private scanEscape(quote: string): string {
    const ch = this.next();
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
        return this.next();
      case "0":
      case "1":
      case "2":
      case "3":
      case "4":
      case "5":
      case "6":
      case "7":
        return this.scanDigits(ch, 8, 3);
      case "x":
        return this.scanDigits(this.next(), 16, 2);
      case "u":
        return this.peek() === "{" ? this.scanBracedEscape() : this.scanDigits(this.next(), 16, 4);
      case "U":
        return this.scanDigits(this.next(), 16, 8);
      default:
        return this.error("invalid char escape");
    }
  }

  /** Checks `count` digits in `base` from `first` on, and returns the rune after them. */
  private scanDigits(first: string, base: number, count: number): string {
    let ch = first;
    let n = count;
    while (n > 0 && digitVal(ch) < base) {
      ch = this.next();
      n--;
    }
    if (n > 0) this.error("invalid char escape");
    return ch;
  }

  /** Checks a `\u{...}` escape, one to six hex digits, and returns the rune after it. */
  private scanBracedEscape(): string {
    this.next();
    let digits = 0;
    for (;;) {
      const p = this.peek();
      if (p === "}") break;
      if (p === EOF_RUNE || digitVal(p) >= 16) this.error("invalid char escape");
      if (digits >= 6) this.error("invalid char escape");
      this.next();
      digits++;
    }
    if (this.peek() !== "}" || digits === 0) this.error("invalid char escape");
    this.next();
    return this.next();
  }

  /** A backtick literal: no escapes, but a doubled backtick stands for one. */
  private scanRawString(quote: string): void {
    let escaped = 0;
    for (;;) {
      let ch = this.next();
      while (ch === quote && this.peek() === quote) {
        this.next();
        ch = this.next();
        escaped++;
      }
      if (ch === quote) break;
      if (ch === EOF_RUNE) this.error("literal not terminated");
    }
    const body = this.src.slice(this.start + 1, this.end - 1);
    this.emitValue("String", escaped === 0 ? body.join("") : undoubled(body, quote));
  }

  /** Ends lexing at a rune no token starts with, named as Go prints a code point. */
  private unrecognized(r: string): never {
    const hex = (r.codePointAt(0) as number).toString(16).toUpperCase().padStart(4, "0");
    const printable = r === " " || /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(r);
    return this.error(`unrecognized character: U+${hex}${printable ? ` '${r}'` : ""}`);
  }
}

/** A raw literal's body with each doubled quote read as one quote. */
function undoubled(body: readonly string[], quote: string): string {
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
  return value;
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
