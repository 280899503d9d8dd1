/**
 * What the model router accepts from a client, checked before anything is parsed, serialised,
 * stored or sent to a model:
 * - a request id (`x-request-id`, a feedback's `request_id`) is 1 to 256 printable ASCII characters
 *   without spaces: it ends the sort keys of the router's DynamoDB items (1,024 bytes at most);
 * - a feedback body is at most 64 KiB and nests at most 32 levels (its label is compared with the
 *   answer's prediction, which serialises it);
 * - a model's prediction is kept (for delayed labels) only while it nests at most 32 levels and
 *   serialises to 64 KiB at most: a larger one is not comparable, never a crash.
 */
export const MAX_REQUEST_ID_LENGTH = 256;
export const MAX_FEEDBACK_BYTES = 64 * 1024;
export const MAX_JSON_DEPTH = 32;
export const MAX_PREDICTION_BYTES = 64 * 1024;

const PRINTABLE = /^[\x21-\x7e]+$/;

/** Why `id` (from `where`) is not a request id the router can key an answer by; undefined when it is. */
export function requestIdProblem(id: string, where: string): string | undefined {
  if (id.length === 0) return `${where} is empty`;
  if (id.length > MAX_REQUEST_ID_LENGTH) {
    return `${where} is ${id.length} characters long; the limit is ${MAX_REQUEST_ID_LENGTH}`;
  }
  if (!PRINTABLE.test(id)) {
    return `${where} must be printable ASCII without spaces (characters ! to ~), got ${JSON.stringify(id.slice(0, 40))}`;
  }
  return undefined;
}

/**
 * True when JSON text nests deeper than `limit` arrays and objects: one pass over the characters
 * (strings skipped), so the text is never parsed when it is refused.
 */
export function textNestsDeeper(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** True when a parsed value nests deeper than `limit` arrays and objects (walked without recursion). */
export function valueNestsDeeper(value: unknown, limit: number): boolean {
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop() as { value: unknown; depth: number };
    if (current === null || typeof current !== "object") continue;
    if (depth + 1 > limit) return true;
    for (const child of Object.values(current)) stack.push({ value: child, depth: depth + 1 });
  }
  return false;
}

/** The prediction as the router keeps it: undefined when too deep or too large to compare and store. */
export function keptPrediction(prediction: unknown): unknown {
  if (prediction === undefined || valueNestsDeeper(prediction, MAX_JSON_DEPTH)) return undefined;
  const text = JSON.stringify(prediction);
  if (text === undefined || Buffer.byteLength(text) > MAX_PREDICTION_BYTES) return undefined;
  return prediction;
}
