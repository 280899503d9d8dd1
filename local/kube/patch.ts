import { isDeepStrictEqual } from "node:util";
import { RolloutsError } from "../../statemachine/errors.ts";

/**
 * JSON Merge Patch (RFC 7386) and JSON Patch (RFC 6902), as the API server applies
 * `application/merge-patch+json` and `application/json-patch+json`. Both are pure: they return a
 * new document and never change their inputs.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function isObject(value: unknown): value is { [key: string]: Json } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** RFC 7386: objects merge key by key, `null` removes a key, anything else replaces. */
export function mergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  const out: { [key: string]: Json } = isObject(target) ? structuredClone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/** Why a JSON Patch could not be decoded (400) or applied (422). */
export class JsonPatchError extends RolloutsError {
  override readonly name = "JsonPatchError";
  constructor(
    message: string,
    readonly kind: "decode" | "apply",
  ) {
    super(message);
  }
}

interface Operation {
  op: "add" | "remove" | "replace" | "move" | "copy" | "test";
  path: string;
  from?: string;
  value?: Json;
}

const OPS = new Set(["add", "remove", "replace", "move", "copy", "test"]);

/** Checks the shape of a patch document: an array of operations, each with what its op needs. */
export function decodeJsonPatch(document: unknown): Operation[] {
  if (!Array.isArray(document)) {
    throw new JsonPatchError("a JSON patch must be an array of operations", "decode");
  }
  return document.map((entry, i) => {
    if (!isObject(entry)) throw new JsonPatchError(`operation ${i} is not an object`, "decode");
    const op = entry.op;
    if (typeof op !== "string" || !OPS.has(op)) {
      throw new JsonPatchError(`operation ${i}: unknown op ${JSON.stringify(op ?? null)}`, "decode");
    }
    if (typeof entry.path !== "string")
      throw new JsonPatchError(`operation ${i} (${op}): missing path`, "decode");
    if ((op === "move" || op === "copy") && typeof entry.from !== "string") {
      throw new JsonPatchError(`operation ${i} (${op}): missing from`, "decode");
    }
    if ((op === "add" || op === "replace" || op === "test") && !Object.hasOwn(entry, "value")) {
      throw new JsonPatchError(`operation ${i} (${op}): missing value`, "decode");
    }
    return entry as unknown as Operation;
  });
}

/** RFC 6901: `/a/b~1c/0` → `["a", "b/c", "0"]`. */
function parsePointer(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw new JsonPatchError(`invalid JSON pointer "${pointer}"`, "apply");
  return pointer
    .slice(1)
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function arrayIndex(token: string, length: number, pointer: string, allowEnd: boolean): number {
  if (allowEnd && token === "-") return length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) {
    throw new JsonPatchError(`invalid array index "${token}" in "${pointer}"`, "apply");
  }
  const index = Number(token);
  if (index > length || (!allowEnd && index === length)) {
    throw new JsonPatchError(`array index ${index} out of bounds in "${pointer}"`, "apply");
  }
  return index;
}

/** The container of the pointer's last token, and that token. */
function parentOf(doc: Json, pointer: string): { parent: Json; key: string } {
  const tokens = parsePointer(pointer);
  const key = tokens.pop();
  if (key === undefined) throw new JsonPatchError("the root cannot be a parent", "apply");
  let node: Json = doc;
  for (const token of tokens) {
    if (Array.isArray(node)) node = node[arrayIndex(token, node.length, pointer, false)] as Json;
    else if (isObject(node) && Object.hasOwn(node, token)) node = node[token] as Json;
    else throw new JsonPatchError(`path "${pointer}" does not exist`, "apply");
  }
  if (!Array.isArray(node) && !isObject(node)) {
    throw new JsonPatchError(`path "${pointer}": parent is not an object or an array`, "apply");
  }
  return { parent: node, key };
}

function get(doc: Json, pointer: string): Json {
  let node: Json = doc;
  for (const token of parsePointer(pointer)) {
    if (Array.isArray(node)) node = node[arrayIndex(token, node.length, pointer, false)] as Json;
    else if (isObject(node) && Object.hasOwn(node, token)) node = node[token] as Json;
    else throw new JsonPatchError(`path "${pointer}" does not exist`, "apply");
  }
  return node;
}

function add(doc: Json, pointer: string, value: Json): Json {
  if (pointer === "") return value;
  const { parent, key } = parentOf(doc, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(key, parent.length, pointer, true), 0, value);
  else (parent as { [key: string]: Json })[key] = value;
  return doc;
}

function remove(doc: Json, pointer: string): Json {
  if (pointer === "") throw new JsonPatchError("cannot remove the whole document", "apply");
  const { parent, key } = parentOf(doc, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(key, parent.length, pointer, false), 1);
  else if (Object.hasOwn(parent as object, key)) delete (parent as { [key: string]: Json })[key];
  else throw new JsonPatchError(`path "${pointer}" does not exist`, "apply");
  return doc;
}

/**
 * RFC 6902, all six operations, atomically: the first failing operation (a missing path, an index
 * out of bounds, a failed `test`) fails the whole patch and the document is unchanged.
 */
export function applyJsonPatch(document: Json, operations: readonly Operation[]): Json {
  let doc: Json = structuredClone(document);
  for (const operation of operations) {
    const value = operation.value === undefined ? undefined : structuredClone(operation.value);
    switch (operation.op) {
      case "add":
        doc = add(doc, operation.path, value as Json);
        break;
      case "remove":
        doc = remove(doc, operation.path);
        break;
      case "replace":
        get(doc, operation.path);
        doc =
          operation.path === ""
            ? (value as Json)
            : add(remove(doc, operation.path), operation.path, value as Json);
        break;
      case "move": {
        const from = operation.from as string;
        if (operation.path !== from && operation.path.startsWith(`${from}/`)) {
          throw new JsonPatchError(`cannot move "${from}" into its own child "${operation.path}"`, "apply");
        }
        const moved = get(doc, from);
        doc = add(remove(doc, from), operation.path, moved);
        break;
      }
      case "copy":
        doc = add(doc, operation.path, structuredClone(get(doc, operation.from as string)));
        break;
      case "test":
        if (!isDeepStrictEqual(get(doc, operation.path), value)) {
          throw new JsonPatchError(`testing value ${operation.path} failed: test failed`, "apply");
        }
        break;
    }
  }
  return doc;
}
