/**
 * The size DynamoDB gives an item, and its limit. DynamoDB refuses a write whose item is larger
 * than 400 KB (409,600 bytes), counting every attribute's name and value: strings as their UTF-8
 * bytes, numbers about one byte per two significant digits plus one, booleans and nulls one byte,
 * and lists and maps three bytes plus one per element (a map's keys counted like attribute names).
 * The in-memory store applies the same rule, so a test catches an item DynamoDB would refuse;
 * dynalite and DynamoDB Local enforce it too.
 */

import { rolloutPk, runSk, TABLE } from "./keys.ts";

/** DynamoDB's item size limit: 400 KB. */
export const MAX_ITEM_BYTES = 400 * 1024;

/** UTF-8 bytes of a string, as DynamoDB counts attribute names and string values. */
export function utf8Bytes(text: string): number {
  // Counting without encoding: a long string (a large response) is measured without a copy.
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** A number's size: one byte per two significant digits, plus one (DynamoDB's own rule of thumb). */
function numberBytes(value: number): number {
  if (value === 0) return 1;
  const [mantissa = "", exponent = "0"] = Math.abs(value).toExponential().split("e");
  const digits = mantissa.replace(".", "").replace(/0+$/, "") || "0";
  const e = Number(exponent);
  // As dynalite computes it: digits paired from the decimal point, so an odd alignment costs one more.
  const odd = digits.length % 2 !== 0 || e % 2 !== 0;
  return 1 + Math.ceil(digits.length / 2) + (odd ? 0 : 1) + (value < 0 ? 1 : 0);
}

/** The size of one attribute value as DynamoDB stores it (JSON values as the document client marshals them). */
export function valueBytes(value: unknown): number {
  if (value === null || value === undefined) return 1;
  switch (typeof value) {
    case "string":
      return utf8Bytes(value);
    case "number":
      return numberBytes(value);
    case "boolean":
      return 1;
    case "object": {
      if (Array.isArray(value)) {
        let size = 3;
        for (const element of value) size += 1 + valueBytes(element);
        return size;
      }
      let size = 3;
      for (const [key, element] of Object.entries(value as Record<string, unknown>)) {
        if (element === undefined) continue;
        size += 1 + utf8Bytes(key) + valueBytes(element);
      }
      return size;
    }
    default:
      return utf8Bytes(String(value));
  }
}

/** The size of an item (attribute name → value) as DynamoDB counts it against {@link MAX_ITEM_BYTES}. */
export function itemBytes(item: Record<string, unknown>): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) {
    if (value === undefined) continue;
    size += utf8Bytes(name) + valueBytes(value);
  }
  return size;
}

/**
 * The size of an analysis-run item as the adapters write it (keys, bookkeeping, TTL and the run),
 * counting each number at its largest, so that a run this says fits is never refused for size.
 */
export function runItemBytes(rollout: string, runId: string, run: unknown): number {
  const largest = Number.MAX_SAFE_INTEGER;
  return itemBytes({
    pk: rolloutPk(rollout),
    sk: runSk(runId),
    run: JSON.parse(JSON.stringify(run ?? null)),
    version: largest,
    updatedAt: largest,
    createdAt: largest,
    rollout,
    runId,
    [TABLE.ttlAttribute]: largest,
  });
}
