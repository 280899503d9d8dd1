/**
 * EventBridge event-pattern matching, so the rules of the synthesized stack (the ECR push rule
 * above all) decide locally exactly what they decide on AWS: every field of the pattern must
 * match; a list of values matches when any one does; a field that is an array in the event
 * matches when any element does; nested objects match nested fields. Supported matchers: exact
 * values (strings, numbers, booleans, `null`), `prefix`, `suffix`, `equals-ignore-case`,
 * `wildcard`, `anything-but` (values, a list, or `{prefix}`/`{suffix}`), `exists` and `numeric`,
 * and `$or`.
 */
export function matchesPattern(pattern: unknown, event: unknown): boolean {
  if (pattern === null || typeof pattern !== "object" || Array.isArray(pattern)) {
    throw new TypeError("an event pattern must be an object");
  }
  return matchObject(pattern as Record<string, unknown>, event);
}

function matchObject(pattern: Record<string, unknown>, value: unknown): boolean {
  for (const [key, rule] of Object.entries(pattern)) {
    if (key === "$or") {
      if (!Array.isArray(rule)) throw new TypeError("$or must be a list of patterns");
      if (!rule.some((alternative) => matchObject(alternative as Record<string, unknown>, value)))
        return false;
      continue;
    }
    const present =
      value !== null && typeof value === "object" && !Array.isArray(value) && Object.hasOwn(value, key);
    const field = present ? (value as Record<string, unknown>)[key] : undefined;
    if (Array.isArray(rule)) {
      if (!matchLeaf(rule, present, field)) return false;
    } else if (rule !== null && typeof rule === "object") {
      if (!present || field === null || typeof field !== "object") return false;
      const candidates = Array.isArray(field) ? field : [field];
      if (!candidates.some((candidate) => matchObject(rule as Record<string, unknown>, candidate)))
        return false;
    } else {
      throw new TypeError(`pattern field "${key}" must be a list of values or an object`);
    }
  }
  return true;
}

function matchLeaf(rules: unknown[], present: boolean, field: unknown): boolean {
  const values = present ? (Array.isArray(field) ? field : [field]) : [];
  return rules.some((rule) => {
    if (rule !== null && typeof rule === "object" && !Array.isArray(rule)) {
      const [entry] = Object.entries(rule as Record<string, unknown>);
      if (entry === undefined) return false;
      const [matcher, arg] = entry;
      if (matcher === "exists") return arg === true ? present && !isPlainObject(field) : !present;
      if (!present) return false;
      return values.some((value) => matchOne(matcher, arg, value));
    }
    return values.some((value) => value === rule);
  });
}

function matchOne(matcher: string, arg: unknown, value: unknown): boolean {
  switch (matcher) {
    case "prefix":
      return typeof value === "string" && stringRule(arg, value, (v, p) => v.startsWith(p));
    case "suffix":
      return typeof value === "string" && stringRule(arg, value, (v, s) => v.endsWith(s));
    case "equals-ignore-case":
      return (
        typeof value === "string" && typeof arg === "string" && value.toLowerCase() === arg.toLowerCase()
      );
    case "wildcard":
      return typeof value === "string" && typeof arg === "string" && wildcard(arg).test(value);
    case "anything-but":
      return anythingBut(arg, value);
    case "numeric":
      return typeof value === "number" && numeric(arg as unknown[], value);
    default:
      throw new TypeError(`unsupported event pattern matcher "${matcher}"`);
  }
}

function stringRule(arg: unknown, value: string, test: (value: string, text: string) => boolean): boolean {
  if (typeof arg === "string") return test(value, arg);
  const ignoreCase = (arg as { "equals-ignore-case"?: unknown })?.["equals-ignore-case"];
  return typeof ignoreCase === "string" && test(value.toLowerCase(), ignoreCase.toLowerCase());
}

function anythingBut(arg: unknown, value: unknown): boolean {
  if (Array.isArray(arg)) return !arg.includes(value);
  if (arg !== null && typeof arg === "object") {
    const [entry] = Object.entries(arg as Record<string, unknown>);
    if (entry === undefined) return true;
    const [matcher, inner] = entry;
    if (Array.isArray(inner)) return !inner.some((item) => matchOne(matcher, item, value));
    return !matchOne(matcher, inner, value);
  }
  return value !== arg;
}

function numeric(conditions: unknown[], value: number): boolean {
  for (let i = 0; i + 1 < conditions.length; i += 2) {
    const op = conditions[i];
    const bound = Number(conditions[i + 1]);
    const ok =
      op === "="
        ? value === bound
        : op === "<"
          ? value < bound
          : op === "<="
            ? value <= bound
            : op === ">"
              ? value > bound
              : op === ">="
                ? value >= bound
                : false;
    if (!ok) return false;
  }
  return true;
}

function wildcard(pattern: string): RegExp {
  const escaped = pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*");
  return new RegExp(`^${escaped}$`);
}

function isPlainObject(value: unknown): boolean {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
