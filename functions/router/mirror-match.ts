import { z } from "zod";
import { re2FullMatch, re2Problem } from "../../statemachine/re2.ts";

/**
 * Which requests a mirror route copies, as Argo Rollouts' `setMirrorRoute` writes it: a list of
 * matches, any of which selects a request; within one match, the method, the path and every header
 * must all match, each by `exact`, `prefix` or `regex` (RE2, the whole value). No match list: every
 * request.
 */
export const StringMatchSchema = z
  .object({ exact: z.string().optional(), prefix: z.string().optional(), regex: z.string().optional() })
  .strict()
  .refine((v) => [v.exact, v.prefix, v.regex].filter((x) => x !== undefined).length === 1, {
    message: "exactly one of exact, prefix or regex",
  })
  .superRefine((v, ctx) => {
    const problem = v.regex === undefined ? undefined : re2Problem(v.regex);
    if (problem) ctx.addIssue({ code: "custom", message: `regex does not compile: ${problem}` });
  });

export const MirrorMatchSchema = z
  .object({
    method: StringMatchSchema.optional(),
    path: StringMatchSchema.optional(),
    headers: z.record(z.string().min(1), StringMatchSchema).optional(),
  })
  .strict();
export type MirrorMatch = z.infer<typeof MirrorMatchSchema>;

type StringMatch = z.infer<typeof StringMatchSchema>;

function matches(m: StringMatch, value: string | undefined): boolean {
  if (value === undefined) return false;
  if (m.exact !== undefined) return value === m.exact;
  if (m.prefix !== undefined) return value.startsWith(m.prefix);
  return m.regex !== undefined && re2FullMatch(m.regex, value);
}

/** True when the request is selected by `match` (no list, or an empty one: every request). */
export function mirrorSelects(
  match: readonly MirrorMatch[],
  request: { method: string; url: string; headers: Readonly<Record<string, string | undefined>> },
): boolean {
  if (match.length === 0) return true;
  const path = request.url.split("?")[0] ?? "/";
  return match.some(
    (m) =>
      (m.method === undefined || matches(m.method, request.method)) &&
      (m.path === undefined || matches(m.path, path)) &&
      Object.entries(m.headers ?? {}).every(([name, value]) =>
        matches(value, request.headers[name.toLowerCase()]),
      ),
  );
}
