import { RE2JS } from "re2js";
import { RolloutsError } from "./errors.ts";

/**
 * Regular expressions the way Argo Rollouts runs them: Go's `regexp`, which is RE2 — linear time,
 * no backreferences, no lookaround. Every pattern a user gives us (a condition's `matches`, a
 * dryRun or measurementRetention metric-name rule, a header route) goes through here, so the
 * semantics are Argo's and a pattern like `^(a+)+$` cannot hang a Lambda, the loader or the proxy.
 */

/** A pattern RE2 refuses; the message is the engine's, like Go's `error parsing regexp: ...`. */
export class RegexSyntaxError extends RolloutsError {
  override readonly name = "RegexSyntaxError";
}

const MAX_CACHED = 512;
const cache = new Map<string, RE2JS | RegexSyntaxError>();

/** Compiles once per process (a bounded cache: patterns come from specs and conditions). */
export function compileRe2(pattern: string): RE2JS {
  let found = cache.get(pattern);
  if (!found) {
    try {
      found = RE2JS.compile(pattern);
    } catch (error) {
      const message = (error as Error).message;
      found = new RegexSyntaxError(
        message.startsWith("error parsing regexp") ? message : `error parsing regexp: ${message}`,
      );
    }
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value as string);
    cache.set(pattern, found);
  }
  if (found instanceof RegexSyntaxError) throw found;
  return found;
}

/** Go's `regexp.MatchString`: the pattern occurs anywhere in the text (anchor it to match all). */
export function re2Search(pattern: string, text: string): boolean {
  return compileRe2(pattern).matcher(text).find();
}

/** The whole text matches (a router's regex header match, as Envoy's `safe_regex` does). */
export function re2FullMatch(pattern: string, text: string): boolean {
  return compileRe2(pattern).matches(text);
}

/** Why a pattern does not compile, or undefined when it does. */
export function re2Problem(pattern: string): string | undefined {
  try {
    compileRe2(pattern);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
