/**
 * Text that reaches a chat service as markup. A notification's template is the operator's: its
 * mentions (`<!channel>`), links and formatting are meant. The values put into it are not: an
 * abort reason, a provider's error text, an image tag can be written by anyone who can push or
 * call, so each value is escaped by the rules of the service's format before it is put in, and
 * nothing a value says can become a mention or a link.
 */

/** The formats a notification service renders as markup. Webhooks get JSON and email plain text. */
export const MARKUP_FORMATS = ["slack", "teams"] as const;
export type MarkupFormat = (typeof MARKUP_FORMATS)[number];

/**
 * Slack's mrkdwn ("Escaping text", Slack's formatting reference): `&`, `<` and `>` are its control
 * characters (every mention and link is `<…>`), and are the only ones to replace by their HTML
 * entities; nothing else is decoded.
 */
export function escapeSlack(text: string): string {
  return text.replace(/[&<>]/g, (c) => (c === "&" ? "&amp;" : c === "<" ? "&lt;" : "&gt;"));
}

/**
 * The Markdown of a Teams Adaptive Card's `TextBlock` (CommonMark's backslash escapes; Teams reads
 * bold, italic, lists and `[text](url)` links, and `<at>…</at>` mentions): the punctuation that
 * opens any of them is backslashed, and so is a list marker at the start of a line.
 */
export function escapeTeams(text: string): string {
  return text
    .replace(/[\\`*_~[\]()<>#&|!]/g, (c) => `\\${c}`)
    .replace(/^([ \t]*)([-+]|\d+[.)])(?=[ \t]|$)/gm, (_, indent: string, marker: string) =>
      marker.length === 1 ? `${indent}\\${marker}` : `${indent}${marker.slice(0, -1)}\\${marker.slice(-1)}`,
    );
}

const ESCAPE: Readonly<Record<MarkupFormat, (text: string) => string>> = {
  slack: escapeSlack,
  teams: escapeTeams,
};

/** A value escaped for a format; `null` (an image not known yet) stays `null`. */
export function escapeFor(format: MarkupFormat, text: string | null): string | null {
  return text === null ? null : ESCAPE[format](text);
}

/**
 * The lifecycle event's fields whose text anyone but the operator may have chosen. The event
 * carries each escaped for every format (`detail.escaped.<format>.<field>`), because EventBridge's
 * input transformer, which fills the templates at delivery, can only copy a value.
 */
export const ESCAPED_FIELDS = ["rollout", "image", "digest", "message", "id"] as const;
export type EscapedField = (typeof ESCAPED_FIELDS)[number];

export type EscapedDetail = Record<MarkupFormat, Partial<Record<EscapedField, string | null>>>;

/**
 * Every escaped field in every format, from the detail's own values. A field the detail lacks
 * (an announcement without an id) is left out, so its placeholder fills as the raw one does.
 */
export function escapedDetail(
  detail: Readonly<Partial<Record<EscapedField, string | null | undefined>>>,
): EscapedDetail {
  const out = {} as EscapedDetail;
  for (const format of MARKUP_FORMATS) {
    const fields: Partial<Record<EscapedField, string | null>> = {};
    for (const field of ESCAPED_FIELDS) {
      const value = detail[field];
      if (value !== undefined) fields[field] = escapeFor(format, value);
    }
    out[format] = fields;
  }
  return out;
}
