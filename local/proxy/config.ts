import { z } from "zod";
import { MODEL_ROUTING_FIELDS } from "../../functions/router/config.ts";
import { MirrorMatchSchema, StringMatchSchema } from "../../functions/router/mirror-match.ts";
import { re2FullMatch } from "../../statemachine/re2.ts";

/**
 * The proxy's routing configuration and the bodies of its admin API (`POST /admin/config`). The
 * admin API is external input, so it is parsed with zod and a bad body gets a 400 that names the
 * field.
 */

const upstreamUrl = z.url().refine((u) => u.startsWith("http://"), {
  message: "an http:// URL (the proxy speaks plain HTTP upstream)",
});

/** One header condition of a route, as Argo's `setHeaderRoute` writes it. */
export const HeaderMatchSchema = z
  .object({
    headerName: z.string().min(1),
    headerValue: StringMatchSchema,
  })
  .strict();

/** A named header route: a request matching every entry goes to the candidate. */
export const ProxyHeaderRouteSchema = z
  .object({ name: z.string().min(1), match: z.array(HeaderMatchSchema).min(1) })
  .strict();

/**
 * Model routing (`functions/router`): sticky cohorts by a user key instead of the exact per-request
 * split, and how mirrored answers are compared. With it (or with a mirror percentage above 0) every
 * request goes through the model router: buffered, answered with `x-model-version`, recorded with
 * its user and prediction, and feedback is taken at `POST /feedback`.
 */
export const ProxyModelSchema = z
  .object({
    ...MODEL_ROUTING_FIELDS,
  })
  .strict();

/** The whole configuration, after merging an update into the current one. */
export const ProxyConfigSchema = z
  .object({
    stable: upstreamUrl,
    canary: upstreamUrl.nullable().default(null),
    /** Percent of requests (0–100, integer) that go to the candidate. */
    weight: z.number().int().min(0).max(100).default(0),
    /** Version label used when the upstream sends no `X-Version` header. */
    stableVersion: z.string().min(1).default("stable"),
    canaryVersion: z.string().min(1).default("canary"),
    headerRoutes: z.array(ProxyHeaderRouteSchema).default([]),
    /** Percent (0–100) of the stable side's requests copied to the candidate (Argo's `setMirrorRoute`). */
    mirrorPercent: z.number().min(0).max(100).default(0),
    mirrorMatch: z.array(MirrorMatchSchema).default([]),
    model: ProxyModelSchema.nullable().default(null),
  })
  .strict()
  .refine((c) => c.weight === 0 || c.canary !== null, {
    message: "a weight above 0 needs a canary upstream",
    path: ["weight"],
  })
  .refine((c) => c.mirrorPercent === 0 || c.canary !== null, {
    message: "a mirror percentage above 0 needs a canary upstream",
    path: ["mirrorPercent"],
  });

/** `POST /admin/config` body: any subset of the configuration, merged into the current one. */
export const ProxyConfigUpdateSchema = z
  .object({
    stable: upstreamUrl.optional(),
    canary: upstreamUrl.nullable().optional(),
    weight: z.number().int().min(0).max(100).optional(),
    stableVersion: z.string().min(1).optional(),
    canaryVersion: z.string().min(1).optional(),
    headerRoutes: z.array(ProxyHeaderRouteSchema).optional(),
    mirrorPercent: z.number().min(0).max(100).optional(),
    mirrorMatch: z.array(MirrorMatchSchema).optional(),
    model: ProxyModelSchema.nullable().optional(),
  })
  .strict();

export type ProxyConfig = z.infer<typeof ProxyConfigSchema>;
export type ProxyConfigInput = z.input<typeof ProxyConfigSchema>;
export type ProxyHeaderRoute = z.infer<typeof ProxyHeaderRouteSchema>;

/** True when `headers` satisfy every condition of `route` (header names are case-insensitive). */
export function matchesRoute(
  route: ProxyHeaderRoute,
  headers: Readonly<Record<string, string | string[] | undefined>>,
): boolean {
  return route.match.every((m) => {
    const raw = headers[m.headerName.toLowerCase()];
    const values = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
    return values.some((value) => {
      const v = m.headerValue;
      if (v.exact !== undefined) return value === v.exact;
      if (v.prefix !== undefined) return value.startsWith(v.prefix);
      // A router matches the whole value, with RE2 (Envoy's safe_regex, which Istio uses).
      if (v.regex !== undefined) return re2FullMatch(v.regex, value);
      return false;
    });
  });
}
