import { isObject, type Json } from "./patch.ts";

/**
 * Strategic merge patch (`application/strategic-merge-patch+json`), what `kubectl apply`,
 * `kubectl edit` and `kubectl set image` send for the built-in kinds. It is a merge patch whose
 * lists of objects merge by a key instead of being replaced, so a patch naming one container
 * changes that container and keeps the others.
 *
 * The API server reads the merge keys from the Go types' `patchMergeKey` tags; this server knows
 * them by field name for the kinds it serves (below). The directives kubectl emits are honoured:
 * `$patch: replace | delete | merge`, `$retainKeys`, `$setElementOrder/<field>` and
 * `$deleteFromPrimitiveList/<field>`. A list with no merge key is replaced, as a merge patch does.
 */

/** Field name → the key its list elements merge on (`patchMergeKey` in the API types). */
const MERGE_KEYS: Record<string, string | ((items: Json[]) => string)> = {
  containers: "name",
  initContainers: "name",
  ephemeralContainers: "name",
  env: "name",
  envFrom: "name",
  volumes: "name",
  volumeMounts: "mountPath",
  volumeDevices: "devicePath",
  imagePullSecrets: "name",
  hostAliases: "ip",
  conditions: "type",
  resourceClaims: "name",
  // A container's ports merge on containerPort, a Service's on port.
  ports: (items) => (items.some((i) => isObject(i) && "containerPort" in i) ? "containerPort" : "port"),
};

/** Lists of strings that merge as sets (`patchStrategy:"merge"` on a primitive list). */
const MERGED_PRIMITIVE_LISTS = new Set(["finalizers"]);

function mergeKeyFor(field: string, items: Json[]): string | undefined {
  const key = Object.hasOwn(MERGE_KEYS, field) ? MERGE_KEYS[field] : undefined;
  return typeof key === "function" ? key(items) : key;
}

const SET_ORDER = "$setElementOrder/";
const DELETE_FROM = "$deleteFromPrimitiveList/";

/** Applies a strategic merge patch to `original`; neither input is changed. */
export function strategicMergePatch(original: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  return mergeMap(isObject(original) ? original : {}, patch);
}

function mergeMap(
  original: { [key: string]: Json },
  patch: { [key: string]: Json },
): { [key: string]: Json } {
  const directive = patch.$patch;
  if (directive === "replace") {
    const { $patch: _, ...rest } = patch;
    return stripDirectives(rest) as { [key: string]: Json };
  }
  let out: { [key: string]: Json } = structuredClone(original);
  const retain = patch.$retainKeys;
  if (Array.isArray(retain)) {
    const keep = new Set(retain.filter((k): k is string => typeof k === "string"));
    out = Object.fromEntries(Object.entries(out).filter(([k]) => keep.has(k)));
  }
  for (const [key, value] of Object.entries(patch)) {
    if (key === "$patch" || key === "$retainKeys" || key.startsWith(SET_ORDER)) continue;
    if (key.startsWith(DELETE_FROM)) {
      const field = key.slice(DELETE_FROM.length);
      const drop = new Set((Array.isArray(value) ? value : []).map((v) => JSON.stringify(v)));
      const list = out[field];
      if (Array.isArray(list)) out[field] = list.filter((v) => !drop.has(JSON.stringify(v)));
      continue;
    }
    if (value === null) {
      delete out[key];
      continue;
    }
    if (isObject(value)) {
      if (value.$patch === "delete") {
        delete out[key];
        continue;
      }
      const current = out[key];
      out[key] = mergeMap(isObject(current) ? current : {}, value);
      continue;
    }
    if (Array.isArray(value)) {
      out[key] = mergeList(key, out[key], value);
      continue;
    }
    out[key] = value;
  }
  for (const [key, order] of Object.entries(patch)) {
    if (!key.startsWith(SET_ORDER) || !Array.isArray(order)) continue;
    const field = key.slice(SET_ORDER.length);
    const list = out[field];
    if (Array.isArray(list)) out[field] = reorder(field, list, order);
  }
  return out;
}

function mergeList(field: string, current: Json | undefined, patch: Json[]): Json[] {
  const original = Array.isArray(current) ? current : [];
  if (patch.some((p) => isObject(p) && p.$patch === "replace")) {
    return patch.filter((p) => !(isObject(p) && p.$patch === "replace")).map(stripDirectives);
  }
  if (MERGED_PRIMITIVE_LISTS.has(field) && patch.every((p) => !isObject(p))) {
    const out = [...original];
    for (const item of patch)
      if (!out.some((o) => JSON.stringify(o) === JSON.stringify(item))) out.push(item);
    return out;
  }
  const mergeKey = mergeKeyFor(field, [...patch, ...original]);
  if (mergeKey === undefined || !patch.every(isObject)) return patch.map(stripDirectives);
  const out: Json[] = structuredClone(original);
  for (const item of patch as Array<{ [key: string]: Json }>) {
    const id = item[mergeKey];
    const at = out.findIndex((o) => isObject(o) && JSON.stringify(o[mergeKey]) === JSON.stringify(id));
    if (item.$patch === "delete") {
      if (at >= 0) out.splice(at, 1);
      continue;
    }
    if (at >= 0) out[at] = mergeMap(out[at] as { [key: string]: Json }, item);
    else out.push(mergeMap({}, item));
  }
  return out;
}

/** `$setElementOrder`: the listed elements first in that order, the others after them. */
function reorder(field: string, list: Json[], order: Json[]): Json[] {
  const mergeKey = mergeKeyFor(field, list);
  const idOf = (item: Json): string =>
    JSON.stringify(mergeKey !== undefined && isObject(item) ? item[mergeKey] : item);
  const rank = new Map(
    order.map((o, i) => [JSON.stringify(mergeKey !== undefined && isObject(o) ? o[mergeKey] : o), i]),
  );
  const listed = list.filter((item) => rank.has(idOf(item)));
  listed.sort((a, b) => (rank.get(idOf(a)) ?? 0) - (rank.get(idOf(b)) ?? 0));
  return [...listed, ...list.filter((item) => !rank.has(idOf(item)))];
}

/** A patch value stored as is, without its directives. */
function stripDirectives(value: Json): Json {
  if (Array.isArray(value)) return value.map(stripDirectives);
  if (!isObject(value)) return value;
  const out: { [key: string]: Json } = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === "$patch" || k === "$retainKeys" || k.startsWith(SET_ORDER) || k.startsWith(DELETE_FROM))
      continue;
    out[k] = stripDirectives(v);
  }
  return out;
}
