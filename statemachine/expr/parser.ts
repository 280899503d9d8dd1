import { RolloutsError } from "../errors.ts";
import type { Node, NodeOf } from "./ast.ts";
import { ExprError } from "./errors.ts";
import { isValidIdentifier, lex, type Token, tokenString } from "./lexer.ts";
import { own } from "./own.ts";

/**
 * expr-lang's parser: operator precedence and associativity, chained comparisons
 * (`0.9 < x < 1.1` is `0.9 < x && x < 1.1`), `not in`/`not matches`, pipes, `let`, `if`/`else`,
 * predicates with `#`, optional chaining, slices, and the node limit. The first error wins, with
 * expr's message at expr's position.
 */

const MAX_NODES = 10_000;

interface Operator {
  precedence: number;
  right?: boolean;
}

const UNARY: Record<string, Operator> = {
  not: { precedence: 50 },
  "!": { precedence: 50 },
  "-": { precedence: 90 },
  "+": { precedence: 90 },
};

const BINARY: Record<string, Operator> = {
  "|": { precedence: 0 },
  or: { precedence: 10 },
  "||": { precedence: 10 },
  and: { precedence: 15 },
  "&&": { precedence: 15 },
  "==": { precedence: 20 },
  "!=": { precedence: 20 },
  "<": { precedence: 20 },
  ">": { precedence: 20 },
  ">=": { precedence: 20 },
  "<=": { precedence: 20 },
  in: { precedence: 20 },
  matches: { precedence: 20 },
  contains: { precedence: 20 },
  startsWith: { precedence: 20 },
  endsWith: { precedence: 20 },
  "..": { precedence: 25 },
  "+": { precedence: 30 },
  "-": { precedence: 30 },
  "*": { precedence: 60 },
  "/": { precedence: 60 },
  "%": { precedence: 60 },
  "**": { precedence: 100, right: true },
  "^": { precedence: 100, right: true },
  "??": { precedence: 500 },
};

const NEGATABLE = new Set(["contains", "matches", "startsWith", "endsWith", "in"]);
const COMPARISON = new Set(["<", ">", ">=", "<="]);

const EXPR = 1;
const PREDICATE = 2;
const OPTIONAL = 128;

/** Builtins taking a predicate, and the shape of their arguments. */
const PREDICATES: Record<string, number[]> = {
  all: [EXPR, PREDICATE],
  none: [EXPR, PREDICATE],
  any: [EXPR, PREDICATE],
  one: [EXPR, PREDICATE],
  filter: [EXPR, PREDICATE],
  map: [EXPR, PREDICATE],
  count: [EXPR, PREDICATE | OPTIONAL],
  sum: [EXPR, PREDICATE | OPTIONAL],
  find: [EXPR, PREDICATE],
  findIndex: [EXPR, PREDICATE],
  findLast: [EXPR, PREDICATE],
  findLastIndex: [EXPR, PREDICATE],
  groupBy: [EXPR, PREDICATE],
  sortBy: [EXPR, PREDICATE, EXPR | OPTIONAL],
  reduce: [EXPR, PREDICATE, EXPR | OPTIONAL],
};

export interface ParseConfig {
  /** Names the environment defines: a call to one of them is a call, not a builtin. */
  readonly overridden?: (name: string) => boolean;
  /** Builtin names (a call to another name is a call of an environment function). */
  readonly builtins: ReadonlySet<string>;
}

class ParseFailure extends RolloutsError {
  override readonly name = "ParseFailure";
  constructor(readonly error: ExprError) {
    super(error.message);
  }
}

const INT64_MAX = 9223372036854775807n;

class Parser {
  private readonly tokens: (Token | ExprError)[];
  private i = -1;
  private current!: Token;
  private stash: Token | undefined;
  private depth = 0;
  private nodes = 0;

  constructor(
    input: string,
    private readonly config: ParseConfig,
  ) {
    this.tokens = lex(input);
  }

  parse(): Node {
    this.next();
    const node = this.sequence();
    if (this.current.kind !== "EOF") this.error(`unexpected token ${tokenString(this.current)}`);
    return node;
  }

  private next(): void {
    if (this.stash) {
      this.current = this.stash;
      this.stash = undefined;
      return;
    }
    this.i++;
    const t = this.tokens[this.i];
    if (t === undefined) this.error("unexpected end of expression");
    if (t instanceof ExprError) throw new ParseFailure(t);
    this.current = t as Token;
  }

  private is(kind: Token["kind"], ...values: string[]): boolean {
    return this.current.kind === kind && (values.length === 0 || values.includes(this.current.value));
  }

  private expect(kind: Token["kind"], ...values: string[]): void {
    if (this.is(kind, ...values)) {
      this.next();
      return;
    }
    this.error(`unexpected token ${tokenString(this.current)}`);
  }

  private error(message: string, at: Token = this.current): never {
    throw new ParseFailure(new ExprError(message, at?.from ?? 0, "parse"));
  }

  private make<N extends Node>(node: N): N {
    this.nodes++;
    if (this.nodes > MAX_NODES) this.error("compilation failed: expression exceeds maximum allowed nodes");
    return node;
  }

  private sequence(): Node {
    const nodes = [this.expression(0)];
    while (this.is("Operator", ";")) {
      this.next();
      if (this.is("EOF")) break;
      nodes.push(this.expression(0));
    }
    if (nodes.length === 1) return nodes[0] as Node;
    return this.make({ t: "sequence", nodes, loc: (nodes[0] as Node).loc });
  }

  private expression(precedence: number): Node {
    if (precedence === 0 && this.is("Operator", "let")) return this.letDeclaration();
    if (precedence === 0 && this.is("Operator", "if")) return this.conditionalIf();

    let left = this.primary();
    let previous = "";
    let opToken = this.current;
    while (opToken.kind === "Operator") {
      const negate = opToken.value === "not";
      let notToken: Token | undefined;
      if (negate) {
        const backup = this.current;
        this.next();
        if (NEGATABLE.has(this.current.value)) {
          const op = own(BINARY, this.current.value);
          if (op && op.precedence >= precedence) {
            notToken = this.current;
            opToken = this.current;
          } else {
            this.stash = this.current;
            this.current = backup;
            break;
          }
        } else {
          this.error(`unexpected token ${tokenString(this.current)}`);
        }
      }
      const op = own(BINARY, opToken.value);
      if (!op || op.precedence < precedence) break;
      this.next();
      if (opToken.value === "|") {
        const ident = this.current;
        this.expect("Identifier");
        left = this.call(ident, [left], true);
      } else {
        if (
          previous === "??" &&
          opToken.value !== "??" &&
          !(opToken.kind === "Bracket" && opToken.value === "(")
        ) {
          this.error(
            `Operator (${opToken.value}) and coalesce expressions (??) cannot be mixed. Wrap either by parentheses.`,
            opToken,
          );
        }
        if (COMPARISON.has(opToken.value)) {
          left = this.comparison(left, opToken, op.precedence);
        } else {
          const right = this.expression(op.right ? op.precedence : op.precedence + 1);
          left = this.make({ t: "binary", op: opToken.value, left, right, loc: opToken.from });
          if (negate) left = this.make({ t: "unary", op: "not", node: left, loc: (notToken as Token).from });
        }
      }
      previous = opToken.value;
      opToken = this.current;
    }
    if (precedence === 0) left = this.conditional(left);
    return left;
  }

  private letDeclaration(): Node {
    this.expect("Operator", "let");
    const name = this.current;
    this.expect("Identifier");
    this.expect("Operator", "=");
    const value = this.expression(0);
    this.expect("Operator", ";");
    const expr = this.sequence();
    return this.make({ t: "let", name: name.value, value, expr, loc: name.from });
  }

  private conditionalIf(): Node {
    this.next();
    const cond = this.expression(0);
    this.expect("Bracket", "{");
    const exp1 = this.sequence();
    this.expect("Bracket", "}");
    this.expect("Operator", "else");
    let exp2: Node;
    if (this.is("Operator", "if")) exp2 = this.conditionalIf();
    else {
      this.expect("Bracket", "{");
      exp2 = this.sequence();
      this.expect("Bracket", "}");
    }
    // expr builds this node without a location (its errors point at the start).
    return { t: "conditional", ternary: false, cond, exp1, exp2, loc: 0 };
  }

  private conditional(node: Node): Node {
    let out = node;
    while (this.is("Operator", "?")) {
      this.next();
      let exp1: Node;
      let exp2: Node;
      if (!this.is("Operator", ":")) {
        exp1 = this.expression(0);
        this.expect("Operator", ":");
        exp2 = this.expression(0);
      } else {
        this.next();
        exp1 = out;
        exp2 = this.expression(0);
      }
      out = this.make({ t: "conditional", ternary: true, cond: out, exp1, exp2, loc: this.current.from });
    }
    return out;
  }

  private primary(): Node {
    const token = this.current;
    if (token.kind === "Operator") {
      const op = own(UNARY, token.value);
      if (op) {
        this.next();
        const expr = this.expression(op.precedence);
        const node = this.make<Node>({ t: "unary", op: token.value, node: expr, loc: token.from });
        return this.postfix(node);
      }
    }
    if (this.is("Bracket", "(")) {
      this.next();
      const expr = this.sequence();
      this.expect("Bracket", ")");
      return this.postfix(expr);
    }
    if (this.depth > 0 && (this.is("Operator", "#") || this.is("Operator", "."))) {
      let name = "";
      if (this.is("Operator", "#")) {
        this.next();
        if (this.is("Identifier")) {
          name = this.current.value;
          this.next();
        }
      }
      return this.postfix(this.make({ t: "pointer", name, loc: token.from }));
    }
    if (this.is("Operator", "::")) {
      this.next();
      const ident = this.current;
      this.expect("Identifier");
      return this.postfix(this.call(ident, [], false));
    }
    return this.secondary();
  }

  private secondary(): Node {
    const token = this.current;
    let node: Node;
    switch (token.kind) {
      case "Identifier":
        this.next();
        switch (token.value) {
          case "true":
            return this.make({ t: "bool", value: true, loc: token.from });
          case "false":
            return this.make({ t: "bool", value: false, loc: token.from });
          case "nil":
            return this.make({ t: "nil", loc: token.from });
        }
        if (this.is("Bracket", "(")) node = this.call(token, [], true);
        else node = this.make({ t: "ident", name: token.value, loc: token.from });
        break;
      case "Number":
        this.next();
        return this.number(token);
      case "String":
        this.next();
        node = this.make({ t: "string", value: token.value, loc: token.from });
        break;
      case "Bytes":
        this.next();
        node = this.make({ t: "bytes", value: token.bytes ?? new Uint8Array(), loc: token.from });
        break;
      default:
        if (this.is("Bracket", "[")) node = this.array(token);
        else if (this.is("Bracket", "{")) node = this.mapLiteral(token);
        else this.error(`unexpected token ${tokenString(token)}`, token);
    }
    return this.postfix(node);
  }

  private number(token: Token): Node {
    const value = token.value.replace(/_/g, "");
    const lower = value.toLowerCase();
    const int = (parsed: bigint | undefined, kind: string, syntaxOk: boolean): Node => {
      if (!syntaxOk || parsed === undefined) {
        this.error(
          `invalid ${kind} literal: strconv.ParseInt: parsing ${JSON.stringify(value)}: invalid syntax`,
        );
      }
      if ((parsed as bigint) > INT64_MAX) {
        this.error(
          `invalid ${kind} literal: strconv.ParseInt: parsing ${JSON.stringify(value)}: value out of range`,
        );
      }
      return this.make({ t: "int", value: parsed as bigint, loc: token.from });
    };
    const prefixed = (prefix: string, digits: RegExp, kind: string): Node => {
      const body = value.slice(2);
      const ok = digits.test(body);
      return int(ok ? BigInt(`${prefix}${body}`) : undefined, kind, ok);
    };
    if (lower.startsWith("0x")) return prefixed("0x", /^[0-9a-fA-F]+$/, "hex");
    if (lower.includes(".") || lower.includes("e")) {
      const n = /^(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/.test(value) ? Number(value) : Number.NaN;
      if (Number.isNaN(n)) {
        this.error(
          `invalid float literal: strconv.ParseFloat: parsing ${JSON.stringify(value)}: invalid syntax`,
        );
      }
      if (!Number.isFinite(n)) {
        this.error(
          `invalid float literal: strconv.ParseFloat: parsing ${JSON.stringify(value)}: value out of range`,
        );
      }
      return this.make({ t: "float", value: n, loc: token.from });
    }
    if (lower.startsWith("0b")) return prefixed("0b", /^[01]+$/, "binary");
    if (lower.startsWith("0o")) return prefixed("0o", /^[0-7]+$/, "octal");
    const ok = /^[0-9]+$/.test(value);
    return int(ok ? BigInt(value) : undefined, "integer", ok);
  }

  private call(token: Token, args: Node[], checkOverrides: boolean): Node {
    const overridden = checkOverrides && (this.config.overridden?.(token.value) ?? false);
    const shape = own(PREDICATES, token.value);
    if (shape && !overridden) {
      this.expect("Bracket", "(");
      const rest = shape.slice(args.length);
      const out = [...args];
      for (let k = 0; k < rest.length; k++) {
        const arg = rest[k] as number;
        if (arg & OPTIONAL) {
          if (this.is("Bracket", ")")) break;
        } else if (this.is("Bracket", ")")) {
          this.error(`expected at least ${rest.length} arguments`);
        }
        if (k > 0) this.expect("Operator", ",");
        out.push(arg & EXPR ? this.expression(0) : this.predicate());
      }
      if (this.is("Operator", ",")) this.next();
      this.expect("Bracket", ")");
      return this.make({ t: "builtin", name: token.value, args: out, loc: token.from });
    }
    if (this.config.builtins.has(token.value) && !overridden) {
      return this.make({ t: "builtin", name: token.value, args: this.arguments(args), loc: token.from });
    }
    const callee = this.make<Node>({ t: "ident", name: token.value, loc: token.from });
    return this.make({ t: "call", callee, args: this.arguments(args), loc: token.from });
  }

  private arguments(initial: Node[]): Node[] {
    const args = [...initial];
    const offset = args.length;
    this.expect("Bracket", "(");
    while (!this.is("Bracket", ")")) {
      if (args.length > offset) this.expect("Operator", ",");
      if (this.is("Bracket", ")")) break;
      args.push(this.expression(0));
    }
    this.expect("Bracket", ")");
    return args;
  }

  private predicate(): Node {
    const start = this.current;
    const brackets = this.is("Bracket", "{");
    if (brackets) this.next();
    this.depth++;
    let node: Node;
    if (brackets) node = this.sequence();
    else {
      node = this.expression(0);
      if (this.is("Operator", ";")) this.error("wrap predicate with brackets { and }");
    }
    this.depth--;
    if (brackets) this.expect("Bracket", "}");
    return this.make({ t: "predicate", node, loc: start.from });
  }

  private array(token: Token): Node {
    const nodes: Node[] = [];
    this.expect("Bracket", "[");
    while (!this.is("Bracket", "]")) {
      if (nodes.length > 0) {
        this.expect("Operator", ",");
        if (this.is("Bracket", "]")) break;
      }
      nodes.push(this.expression(0));
    }
    this.expect("Bracket", "]");
    return this.make({ t: "array", nodes, loc: token.from });
  }

  private mapLiteral(token: Token): Node {
    this.expect("Bracket", "{");
    const pairs: Node[] = [];
    while (!this.is("Bracket", "}")) {
      if (pairs.length > 0) {
        this.expect("Operator", ",");
        if (this.is("Bracket", "}")) break;
        if (this.is("Operator", ",")) this.error(`unexpected token ${tokenString(this.current)}`);
      }
      let key: Node;
      if (this.is("Number") || this.is("String") || this.is("Identifier")) {
        key = this.make({ t: "string", value: this.current.value, loc: this.current.from });
        this.next();
      } else if (this.is("Bracket", "(")) {
        key = this.expression(0);
      } else {
        this.error(
          `a map key must be a quoted string, a number, a identifier, or an expression enclosed in parentheses (unexpected token ${tokenString(this.current)})`,
        );
      }
      this.expect("Operator", ":");
      const value = this.expression(0);
      pairs.push(this.make({ t: "pair", key, value, loc: token.from }));
    }
    this.expect("Bracket", "}");
    return this.make({ t: "map", pairs, loc: token.from });
  }

  private postfix(start: Node): Node {
    let node = start;
    let postfix = this.current;
    while (postfix.kind === "Operator" || postfix.kind === "Bracket") {
      let optional = postfix.value === "?.";
      if (postfix.value === "." || postfix.value === "?.") {
        this.next();
        let property = this.current;
        if (optional && property.kind === "Bracket" && property.value === "[") {
          postfix = property;
          node = this.index(node, postfix, true);
          postfix = this.current;
          continue;
        }
        this.next();
        if (
          property.kind !== "Identifier" &&
          (property.kind !== "Operator" || !isValidIdentifier(property.value))
        ) {
          this.error("expected name");
        }
        const name = this.make<Node>({ t: "string", value: property.value, loc: property.from });
        const isChain = node.t === "chain";
        if (node.t === "chain") node = node.node;
        const member: NodeOf<"member"> = this.make({
          t: "member",
          node,
          property: name,
          optional,
          method: false,
          loc: property.from,
        });
        if (this.is("Bracket", "(")) {
          member.method = true;
          node = this.make({ t: "call", callee: member, args: this.arguments([]), loc: property.from });
        } else node = member;
        if (isChain || optional) node = this.make({ t: "chain", node, loc: property.from });
        property = this.current;
      } else if (postfix.value === "[") {
        node = this.index(node, postfix, false);
      } else break;
      optional = false;
      postfix = this.current;
    }
    return node;
  }

  /** `x[i]`, `x[a:b]`, `x?.[i]`; the current token is the `[`. */
  private index(node: Node, bracket: Token, optional: boolean): Node {
    this.next();
    if (this.is("Operator", ":")) {
      this.next();
      let to: Node | undefined;
      if (!this.is("Bracket", "]")) to = this.expression(0);
      const out = this.make<Node>({ t: "slice", node, ...(to ? { to } : {}), loc: bracket.from });
      this.expect("Bracket", "]");
      return out;
    }
    const from = this.expression(0);
    if (this.is("Operator", ":")) {
      this.next();
      let to: Node | undefined;
      if (!this.is("Bracket", "]")) to = this.expression(0);
      const out = this.make<Node>({ t: "slice", node, from, ...(to ? { to } : {}), loc: bracket.from });
      this.expect("Bracket", "]");
      return out;
    }
    let out: Node = this.make({
      t: "member",
      node,
      property: from,
      optional,
      method: false,
      loc: bracket.from,
    });
    if (optional) out = this.make({ t: "chain", node: out, loc: bracket.from });
    this.expect("Bracket", "]");
    return out;
  }

  private comparison(first: Node, firstToken: Token, precedence: number): Node {
    let left = first;
    let token = firstToken;
    let root: Node | undefined;
    for (;;) {
      const right = this.expression(precedence + 1);
      const cmp = this.make<Node>({ t: "binary", op: token.value, left, right, loc: token.from });
      root = root ? this.make({ t: "binary", op: "&&", left: root, right: cmp, loc: token.from }) : cmp;
      left = right;
      token = this.current;
      if (!(token.kind === "Operator" && COMPARISON.has(token.value))) break;
      this.next();
    }
    return root;
  }
}

/** Parses an expression; throws {@link ExprError} (stage "parse") with expr's message and position. */
export function parse(input: string, config: ParseConfig): Node {
  try {
    return new Parser(input, config).parse();
  } catch (e) {
    if (e instanceof ParseFailure) throw e.error;
    throw e;
  }
}
