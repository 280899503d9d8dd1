/**
 * Go's `encoding/json` writing, shared by expr's `toJSON` and the values the providers store
 * (`json.Marshal` of a decoded JSON value): strings escaped as Go escapes them (`<`, `>` and `&`
 * as `\u003c`…, U+2028/U+2029, `\b` and `\f` as Go 1.22 writes them), floats in Go's format,
 * object keys sorted.
 */

/** A string as `json.Marshal` writes it. */
export function goJSONString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0) as number;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (ch === "<" || ch === ">" || ch === "&") out += `\\u00${c.toString(16)}`;
    else if (c < 0x20) out += `\\u${c.toString(16).padStart(4, "0")}`;
    else if (c === 0x2028 || c === 0x2029) out += `\\u${c.toString(16)}`;
    else if (c >= 0xd800 && c <= 0xdfff) out += "\ufffd";
    else out += ch;
  }
  return `${out}"`;
}

/**
 * A float64 as `json.Marshal` writes it: `%f`-style from 1e-6 up to 1e21, `e` form outside it
 * with Go's exponent (`1e+21`, `1e-7`: encoding/json trims `e-07` to `e-7`), `-0` kept.
 * Undefined for NaN and the infinities, which Go refuses (`json: unsupported value`).
 */
export function goJSONFloat(f: number): string | undefined {
  if (!Number.isFinite(f)) return undefined;
  const abs = Math.abs(f);
  if (abs !== 0 && (abs < 1e-6 || abs >= 1e21)) {
    const [mant, e] = f.toExponential().split("e") as [string, string];
    const x = Number(e);
    return `${mant}e${x < 0 ? "-" : "+"}${x < 0 ? String(-x) : String(x).padStart(2, "0")}`;
  }
  return Object.is(f, -0) ? "-0" : String(f);
}

/** Go's byte-wise order of UTF-8 strings (JavaScript's `<` compares UTF-16 units). */
export function goStringCompare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/**
 * `json.Marshal` of a value as `JSON.parse` returns it (Go's `any` from `json.Unmarshal`): compact,
 * keys sorted, Go's strings and floats.
 */
export function goMarshal(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "boolean") return String(v);
  if (typeof v === "number") return goJSONFloat(v) ?? "null";
  if (typeof v === "string") return goJSONString(v);
  if (Array.isArray(v)) return `[${v.map(goMarshal).join(",")}]`;
  if (typeof v === "object") {
    const keys = Object.keys(v).sort(goStringCompare);
    const obj = v as Record<string, unknown>;
    return `{${keys.map((k) => `${goJSONString(k)}:${goMarshal(obj[k])}`).join(",")}}`;
  }
  return "null";
}
