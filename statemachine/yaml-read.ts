import { CST, Lexer, Parser } from "yaml";
import { MAX_PARSER_DEPTH, MAX_TOKENS } from "./limits.ts";

/** What one load has read so far, shared by its files: the token budget is the load's. */
export interface TokenBudget {
  tokens: number;
}

/** Why the reader stopped before the end of a text, and where (an offset into it). */
export type ReadStop =
  | { reason: "tokens"; offset: number }
  | { reason: "depth"; offset: number }
  | { reason: "range"; offset: number; message: string };

/** Lexical tokens that are not content: what the budget does not count. */
const NOT_COUNTED = new Set<string | null>([
  "space",
  "newline",
  "comment",
  "scalar",
  "byte-order-mark",
  "doc-mode",
]);

/**
 * The CST of `text`, as `new Parser(onNewLine).parse(text)` gives it, but driven one lexical token
 * at a time so that no input makes the parser work without bound. The reading stops, with `stop`
 * set, once the load has read {@link MAX_TOKENS} tokens, once the parser holds more than
 * {@link MAX_PARSER_DEPTH} collections open (a malformed block can open one per line, and the
 * parser recurses through them), or if the parser throws a RangeError all the same (its stack or
 * a string ran out). The documents completed before the stop are yielded; the one it was reading
 * is not.
 */
export function* parseBounded(
  text: string,
  onNewLine: (offset: number) => void,
  budget: TokenBudget,
  stop: { at?: ReadStop },
): Generator<CST.Token> {
  const parser = new Parser(onNewLine);
  onNewLine(0);
  const pending: CST.Token[] = [];
  try {
    for (const lexeme of new Lexer().lex(text)) {
      if (!NOT_COUNTED.has(CST.tokenType(lexeme)) && ++budget.tokens > MAX_TOKENS) {
        stop.at = { reason: "tokens", offset: parser.offset };
        return;
      }
      for (const token of parser.next(lexeme)) pending.push(token);
      if (parser.stack.length > MAX_PARSER_DEPTH) {
        stop.at = { reason: "depth", offset: parser.offset };
        return;
      }
      if (pending.length > 0) yield* pending.splice(0); // most lexemes complete no token
    }
    for (const token of parser.end()) pending.push(token);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    stop.at = { reason: "range", offset: parser.offset, message: error.message };
    return;
  }
  yield* pending.splice(0);
}
