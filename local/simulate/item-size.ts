/**
 * DynamoDB's item size and request units, from items in DynamoDB's wire format (`{S: "…"}`,
 * `{N: "…"}`, `{B: "<base64>"}`, …), as the developer guide's "DynamoDB item sizes and formats"
 * and "DynamoDB read and write operations" describe them:
 *
 * - an item is the sum of its attribute names' UTF-8 bytes and its values' sizes;
 * - a string is its UTF-8 bytes; a binary its raw bytes (base64 only carries it); a Boolean or a
 *   null one byte;
 * - a number is about one byte per two significant digits plus one (leading and trailing zeros
 *   trimmed); digits are paired from the decimal point, so an odd alignment costs one more byte,
 *   and a negative number one more, as dynalite computes it;
 * - a list or a map is three bytes plus one per element, a map's keys counted like names; a set
 *   is the sum of its elements;
 * - a write unit is 1 KB of the item, a read unit 4 KB, halved when eventually consistent.
 */

/** A DynamoDB attribute value as it travels on the wire. */
export type WireValue = Record<string, unknown>;
/** A DynamoDB item as it travels on the wire: attribute name → value. */
export type WireItem = Record<string, WireValue>;

/** UTF-8 bytes of a string (attribute names and string values). */
function utf8(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/** Raw bytes of a binary value: base64 on the wire, bytes once an SDK has decoded it. */
function base64Bytes(value: unknown): number {
  if (value instanceof Uint8Array) return value.length;
  return Buffer.from(String(value), "base64").length;
}

/**
 * A number's size from its decimal text: one byte per two significant digits, plus one; one more
 * when its digits do not pair from the decimal point, and one more when it is negative.
 */
export function numberBytes(text: string): number {
  const match = /^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/.exec(text);
  if (!match) throw new RangeError(`not a DynamoDB number: ${JSON.stringify(text)}`);
  const [, sign = "", whole = "", fraction = "", exponent = "0"] = match;
  const all = `${whole}${fraction}`;
  const lead = all.length - all.replace(/^0+/, "").length;
  const digits = all.replace(/^0+/, "").replace(/0+$/, "");
  if (digits.length === 0) return 1;
  // The exponent of the first significant digit, as in d.ddd × 10^e.
  const e = whole.length - lead - 1 + Number(exponent);
  const odd = digits.length % 2 !== 0 || e % 2 !== 0;
  return 1 + Math.ceil(digits.length / 2) + (odd ? 0 : 1) + (sign === "-" ? 1 : 0);
}

/** The size of one attribute value. */
export function valueBytes(value: WireValue): number {
  const [type, inner] = Object.entries(value)[0] ?? [];
  switch (type) {
    case "S":
      return utf8(String(inner));
    case "N":
      return numberBytes(String(inner));
    case "B":
      return base64Bytes(inner);
    case "BOOL":
    case "NULL":
      return 1;
    case "SS":
      return (inner as string[]).reduce((sum, s) => sum + utf8(s), 0);
    case "NS":
      return (inner as string[]).reduce((sum, n) => sum + numberBytes(n), 0);
    case "BS":
      return (inner as unknown[]).reduce((sum: number, b) => sum + base64Bytes(b), 0);
    case "L":
      return (inner as WireValue[]).reduce((sum, element) => sum + 1 + valueBytes(element), 3);
    case "M":
      return Object.entries(inner as WireItem).reduce(
        (sum, [key, element]) => sum + 1 + utf8(key) + valueBytes(element),
        3,
      );
    default:
      throw new RangeError(`not a DynamoDB attribute value: ${JSON.stringify(value)}`);
  }
}

/** The size of an item: each attribute's name and value. */
export function itemBytes(item: WireItem | undefined): number {
  if (!item) return 0;
  return Object.entries(item).reduce((sum, [name, value]) => sum + utf8(name) + valueBytes(value), 0);
}

/** Write request units for a write of an item this large: one per KB, at least one. */
export function writeUnits(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / 1024));
}

/**
 * Read request units for reading this many bytes in one request (a `GetItem`'s item, or the sum
 * of the items a `Query` read): one per 4 KB, at least one, halved when eventually consistent.
 */
export function readUnits(bytes: number, consistent: boolean): number {
  return Math.max(1, Math.ceil(bytes / 4096)) * (consistent ? 1 : 0.5);
}
