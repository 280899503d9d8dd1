import { printable } from "../terminal.ts";

/**
 * HTML built so that nothing can be left unescaped: the `html` tag escapes every value it
 * interpolates unless that value is itself `html` (a fragment already built this way). What the
 * store holds — an abort reason someone typed, a provider's error message, a name in a file — is
 * text, never markup: it is stripped of control characters (as on the terminal) and its `&`,
 * `<`, `>`, `"` and `'` become entities, which is safe in element content and in quoted
 * attribute values alike.
 */

/** A fragment of HTML that is already safe. Only `html` and `raw` make one. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type Value = Html | string | number | boolean | null | undefined | readonly Value[];

/** `text` safe in element content and in a quoted attribute; control characters removed. */
export function escapeHtml(text: string, options: { multiline?: boolean } = {}): string {
  return printable(text, options).replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);
}

const ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

function render(value: Value): string {
  if (value instanceof Html) return value.text;
  if (value === null || value === undefined || value === false) return "";
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}

/** A template tag: the literal parts are markup, every `${value}` is escaped (fragments and lists of them pass). */
export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0] ?? "";
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? "");
  });
  return new Html(out);
}

/** Markup this program wrote itself (a stylesheet, an SVG path's numbers): never text from outside. */
export function raw(text: string): Html {
  return new Html(text);
}
