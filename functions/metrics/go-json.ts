/**
 * What Go's `encoding/json` prints and says, for the providers whose measurements Argo prints with
 * it: `json.Marshal` (a map's keys sorted, `<`, `>`, `&`, U+2028 and U+2029 escaped) and the
 * messages of `json.Unmarshal` that users see in an AnalysisRun.
 */

/** Go's `json.Marshal` of a decoded JSON value (maps sorted by key, HTML characters escaped). */
export function goMarshal(value: unknown): string {
  return JSON.stringify(sortKeys(value)).replace(/[<>&\u2028\u2029]/g, (c) => {
    const code = c.charCodeAt(0).toString(16).padStart(4, "0");
    return `\\u${code}`;
  });
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  // Go sorts a map's keys by their bytes; UTF-16 order is the same for every key short of
  // characters outside the Basic Multilingual Plane.
  for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key]);
  return out;
}

/** `json.Unmarshal`'s name of a JSON value's kind: `string`, `number`, `bool`, `array`, `object`. */
export function goJsonKind(value: unknown): string {
  if (Array.isArray(value)) return "array";
  if (typeof value === "boolean") return "bool";
  if (typeof value === "number") return "number";
  if (typeof value === "string") return "string";
  return "object";
}

/** Go's `json.Unmarshal` of text, or its syntax error's message (the common ones in Go's words). */
export function goParse(text: string): { value: unknown } | { error: string } {
  try {
    return { value: JSON.parse(text) };
  } catch {
    const trimmed = text.trim();
    if (trimmed === "") return { error: "unexpected end of JSON input" };
    const first = trimmed.charAt(0);
    if (!/^[[{"\-0-9tfn]/.test(first)) {
      return { error: `invalid character '${first}' looking for beginning of value` };
    }
    return { error: "unexpected end of JSON input or invalid character in the JSON body" };
  }
}

/** Go's `UnmarshalTypeError` message for a struct field. */
export function fieldTypeError(kind: string, structName: string, field: string, goType: string): string {
  return `json: cannot unmarshal ${kind} into Go struct field ${structName}.${field} of type ${goType}`;
}

/** The member of a JSON object Go decodes into a field: its name matched without regard to case (the last one wins). */
export function goField(object: Record<string, unknown>, name: string): unknown {
  let found: unknown;
  for (const [key, value] of Object.entries(object))
    if (key.toLowerCase() === name.toLowerCase()) found = value;
  return found;
}

/** True for a JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
