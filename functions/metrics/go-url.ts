/**
 * Go's `net/url` query strings, as the Graphite and Wavefront clients build their requests:
 * `url.ParseQuery` (pairs that do not unescape are dropped, as `URL.Query()` drops them) and
 * `Values.Encode` (keys sorted by their bytes, `QueryEscape`d: a space is `+`). Values are kept as
 * bytes, so a `%FF` that is not UTF-8 goes out as it came in.
 */

/** Query values by key, each key's values in the order given. */
export type GoValues = Map<string, Uint8Array[]>;

const HEX = /^[0-9A-Fa-f]{2}$/;

/** Go's `QueryUnescape` (`+` is a space), as bytes; undefined where Go reports an invalid escape. */
export function queryUnescape(s: string): Uint8Array | undefined {
  const out: number[] = [];
  const utf8 = new TextEncoder();
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c === "%") {
      const hex = s.slice(i + 1, i + 3);
      if (!HEX.test(hex)) return undefined;
      out.push(Number.parseInt(hex, 16));
      i += 2;
    } else if (c === "+") {
      out.push(0x20);
    } else {
      const cp = s.codePointAt(i) as number;
      for (const b of utf8.encode(String.fromCodePoint(cp))) out.push(b);
      if (cp > 0xffff) i++;
    }
  }
  return Uint8Array.from(out);
}

/** Go's `QueryEscape` of bytes: `A-Za-z0-9-_.~` kept, a space `+`, every other byte `%XX`. */
export function queryEscape(bytes: Uint8Array | string): string {
  const b = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  let out = "";
  for (const byte of b) {
    const c = String.fromCharCode(byte);
    if (/[A-Za-z0-9\-_.~]/.test(c)) out += c;
    else if (byte === 0x20) out += "+";
    else out += `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** `url.ParseQuery`, keeping what it can: a pair with `;` or a bad escape is dropped. */
export function parseQuery(raw: string): GoValues {
  const values: GoValues = new Map();
  for (const pair of raw.split("&")) {
    if (pair === "" || pair.includes(";")) continue;
    const eq = pair.indexOf("=");
    const rawKey = eq < 0 ? pair : pair.slice(0, eq);
    const rawValue = eq < 0 ? "" : pair.slice(eq + 1);
    const key = queryUnescape(rawKey);
    const value = queryUnescape(rawValue);
    if (!key || !value) continue;
    const name = Buffer.from(key).toString("latin1");
    values.set(name, [...(values.get(name) ?? []), value]);
  }
  return values;
}

/** `Values.Set`. */
export function setValue(values: GoValues, key: string, value: string): void {
  values.set(Buffer.from(new TextEncoder().encode(key)).toString("latin1"), [
    new TextEncoder().encode(value),
  ]);
}

/** `Values.Encode`: keys sorted by their bytes, each value `key=value`, joined by `&`. */
export function encodeQuery(values: GoValues): string {
  const keys = [...values.keys()].sort((a, b) =>
    Buffer.compare(Buffer.from(a, "latin1"), Buffer.from(b, "latin1")),
  );
  const parts: string[] = [];
  for (const key of keys) {
    const k = queryEscape(Buffer.from(key, "latin1"));
    for (const v of values.get(key) ?? []) parts.push(`${k}=${queryEscape(v)}`);
  }
  return parts.join("&");
}
