/**
 * ECR tag patterns → EventBridge content filters, free of CDK but for its types, so it can be
 * tested cheaply and reused by the trigger's documentation. EventBridge matches `image-tag`
 * itself, so a push whose tag does not match never invokes the trigger (the trigger re-checks
 * with the same pattern).
 */

import type { EventPattern } from "aws-cdk-lib/aws-events";

/**
 * ECR tags: letters, digits, `_`, `.`, `-` (up to 128); a pattern may add the trigger's glob
 * characters `*` (any run) and `?` (one character), as `functions/trigger/routes.ts` matches them.
 */
const TAG_PATTERN = /^[A-Za-z0-9_.*?-]{1,128}$/;

/** Why a tag pattern is unusable, or `undefined` when it is fine. */
export function tagPatternProblem(pattern: string): string | undefined {
  if (!TAG_PATTERN.test(pattern)) {
    return `"${pattern}" is not a tag pattern: 1–128 characters of letters, digits, "_", ".", "-", "*" and "?"`;
  }
  if (/\*\*/.test(pattern)) return `"${pattern}": "**" means the same as "*"; write one`;
  return undefined;
}

/**
 * The `image-tag` filter for a pattern: none for `*` (every tag), the tag itself without `*`, a
 * prefix filter for `v*` (cheaper to evaluate and reads better in the console), a wildcard filter
 * otherwise. EventBridge wildcards know only `*`, so `?` widens to `*` there and the trigger's
 * exact glob match narrows it again.
 */
export function imageTagFilter(pattern: string | undefined): unknown[] | undefined {
  if (pattern === undefined || pattern === "*") return undefined;
  const stars = pattern.split("*").length - 1;
  if (stars === 0 && !pattern.includes("?")) return [pattern];
  if (stars === 1 && pattern.endsWith("*") && !pattern.includes("?"))
    return [{ prefix: pattern.slice(0, -1) }];
  return [{ wildcard: pattern.replace(/\?/g, "*") }];
}

/** The same pattern as a RegExp, for documentation and tests of what the filter admits. */
export function tagPatternRegExp(pattern: string): RegExp {
  const body = pattern
    .split("")
    .map((ch) => (ch === "*" ? ".*" : ch === "?" ? "." : ch.replace(/[.-]/g, "\\$&")))
    .join("");
  return new RegExp(`^${body}$`);
}

/**
 * The EventBridge pattern of ECR's event for a successful push to `repository`, with an
 * `image-tag` filter when one is given (absent: every push, a push by digest only included).
 */
export function ecrPushPattern(repository: string, imageTag?: unknown[]): EventPattern {
  return {
    source: ["aws.ecr"],
    detailType: ["ECR Image Action"],
    detail: {
      "action-type": ["PUSH"],
      result: ["SUCCESS"],
      "repository-name": [repository],
      ...(imageTag ? { "image-tag": imageTag } : {}),
    },
  };
}
