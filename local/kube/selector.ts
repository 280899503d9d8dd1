import { badRequest } from "./status.ts";

/**
 * Label selectors: the `labelSelector` query string (`app=web,tier!=db,env in (a,b),!legacy`)
 * and the `LabelSelector` object of a Deployment (`matchLabels`, `matchExpressions`), both as one
 * list of requirements that every label set is matched against.
 */

export interface Requirement {
  key: string;
  operator: "=" | "!=" | "in" | "notin" | "exists" | "!";
  values: string[];
}

export type Labels = Record<string, string>;

export function matches(labels: Labels | undefined, requirements: readonly Requirement[]): boolean {
  const own = labels ?? {};
  return requirements.every((r) => {
    const has = Object.hasOwn(own, r.key);
    const value = own[r.key];
    switch (r.operator) {
      case "=":
      case "in":
        return has && r.values.includes(value as string);
      case "!=":
      case "notin":
        return !has || !r.values.includes(value as string);
      case "exists":
        return has;
      case "!":
        return !has;
    }
    return false;
  });
}

const KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

function checkKey(key: string, selector: string): string {
  if (!KEY.test(key) || key.length > 316) {
    throw badRequest(`unable to parse requirement: invalid label key "${key}" in selector "${selector}"`);
  }
  return key;
}

function checkValue(value: string, selector: string): string {
  if (!VALUE.test(value) || value.length > 63) {
    throw badRequest(`unable to parse requirement: invalid label value "${value}" in selector "${selector}"`);
  }
  return value;
}

/** Splits at commas that are not inside parentheses. */
function splitTerms(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) {
      terms.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(selector.slice(start));
  return terms.map((t) => t.trim());
}

/**
 * Parses a `labelSelector` query parameter; a malformed one is a 400 naming it, as the API server
 * answers. The empty selector matches everything.
 */
export function parseLabelSelector(selector: string): Requirement[] {
  if (selector.trim() === "") return [];
  return splitTerms(selector).map((term) => {
    if (term === "") throw badRequest(`unable to parse requirement: empty term in selector "${selector}"`);
    const set = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term);
    if (set) {
      const values = set[3]!
        .split(",")
        .map((v) => checkValue(v.trim(), selector))
        .filter((v, i, all) => all.indexOf(v) === i);
      return { key: checkKey(set[1]!, selector), operator: set[2] as "in" | "notin", values };
    }
    const eq = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(term);
    if (eq) {
      const operator = eq[2] === "!=" ? "!=" : "=";
      return { key: checkKey(eq[1]!, selector), operator, values: [checkValue(eq[3]!, selector)] };
    }
    if (term.startsWith("!"))
      return { key: checkKey(term.slice(1).trim(), selector), operator: "!", values: [] };
    return { key: checkKey(term, selector), operator: "exists", values: [] };
  });
}

/** A Deployment's or ReplicaSet's `spec.selector` as requirements. */
export function fromLabelSelector(selector: unknown): Requirement[] {
  if (typeof selector !== "object" || selector === null) return [];
  const s = selector as {
    matchLabels?: Record<string, string>;
    matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
  };
  const out: Requirement[] = Object.entries(s.matchLabels ?? {}).map(([key, value]) => ({
    key,
    operator: "=",
    values: [value],
  }));
  for (const e of s.matchExpressions ?? []) {
    const operator =
      e.operator === "In"
        ? "in"
        : e.operator === "NotIn"
          ? "notin"
          : e.operator === "Exists"
            ? "exists"
            : e.operator === "DoesNotExist"
              ? "!"
              : undefined;
    if (operator) out.push({ key: e.key, operator, values: e.values ?? [] });
  }
  return out;
}

/** A Service's `spec.selector` (a plain map) as requirements; an empty map selects nothing. */
export function fromServiceSelector(selector: unknown): Requirement[] | undefined {
  if (typeof selector !== "object" || selector === null) return undefined;
  const entries = Object.entries(selector as Record<string, string>);
  if (entries.length === 0) return undefined;
  return entries.map(([key, value]) => ({ key, operator: "=", values: [value] }));
}

/** `app=web,pod-template-hash=abc`: the string form of a selector (a Scale's `status.selector`). */
export function selectorString(requirements: readonly Requirement[]): string {
  return requirements
    .map((r) => {
      switch (r.operator) {
        case "=":
        case "!=":
          return `${r.key}${r.operator}${r.values[0]}`;
        case "in":
        case "notin":
          return `${r.key} ${r.operator} (${r.values.join(",")})`;
        case "exists":
          return r.key;
        case "!":
          return `!${r.key}`;
      }
      return "";
    })
    .join(",");
}
