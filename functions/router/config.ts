import { z } from "zod";
import { MirrorMatchSchema } from "./mirror-match.ts";

/**
 * The model router's whole routing state, replaced atomically (the reference's `RouteConfig`): a
 * primary model, an optional candidate with a weight, a mirror percentage, how a request's cohort
 * key is read and how two answers are compared. External input (the proxy's admin API, the Lambda's
 * environment), so it is parsed with zod and a bad field is named.
 */

const httpUrl = z.url().refine((u) => u.startsWith("http://") || u.startsWith("https://"), {
  message: "an http:// or https:// URL",
});

/** A SageMaker endpoint's production variant, called with `InvokeEndpoint` and `TargetVariant`. */
export const SageMakerVariantSchema = z
  .object({ endpoint: z.string().min(1).max(63), variant: z.string().min(1).max(63) })
  .strict();

/**
 * One model version behind the router: its name (what `x-model-version` says) and where it
 * answers: an HTTP base URL, or a SageMaker endpoint's variant (the router function on AWS).
 */
export const BackendSchema = z
  .object({
    name: z.string().min(1).max(128),
    url: httpUrl.optional(),
    sagemaker: SageMakerVariantSchema.optional(),
  })
  .strict()
  .refine((b) => (b.url === undefined) !== (b.sagemaker === undefined), {
    message: "give exactly one of url (an HTTP backend) or sagemaker ({endpoint, variant})",
  });
export type Backend = z.infer<typeof BackendSchema>;

/** Where a backend answers, for messages: its URL or `sagemaker:ENDPOINT/VARIANT`. */
export function describeBackend(backend: Backend): string {
  return backend.url ?? `sagemaker:${backend.sagemaker?.endpoint}/${backend.sagemaker?.variant}`;
}

/** How the two answers of a mirrored request are compared. */
export const CompareSchema = z
  .object({
    /** Dot path of the prediction in a JSON answer (`label`, `prediction.score`); `""` = the whole body. */
    path: z.string().max(256).default("label"),
    /** `class`: equal values agree; `score`: numbers within the tolerances agree. */
    kind: z.enum(["class", "score"]).default("class"),
    /** Scores: agree when |candidate - primary| <= absolute ... */
    absolute: z.number().min(0).default(0),
    /** ... or when |candidate - primary| / |primary| <= relative. */
    relative: z.number().min(0).default(0),
  })
  .strict();
export type CompareSettings = z.infer<typeof CompareSchema>;

/**
 * How a model router splits and compares, wherever it is configured (the router's configuration,
 * a target's `router: {type: model}`, the local proxy's model settings): sticky cohorts or a
 * per-request split, the cohort salt (absent = the candidate's name, so every candidate gets
 * another first cohort), where the user id is read (a header, then a top-level JSON body field),
 * and how mirrored answers are compared.
 */
export const MODEL_ROUTING_FIELDS = {
  sticky: z.boolean().default(true),
  salt: z.string().min(1).max(128).optional(),
  key: z
    .object({
      header: z.string().min(1).max(128).default("x-user-id"),
      field: z.string().min(1).max(128).default("user"),
    })
    .strict()
    .default({ header: "x-user-id", field: "user" }),
  compare: CompareSchema.default({ path: "label", kind: "class", absolute: 0, relative: 0 }),
};

export const ModelRouterConfigSchema = z
  .object({
    primary: BackendSchema,
    candidate: BackendSchema.nullable().default(null),
    /** Percent (0–100) of users (sticky) or requests (not sticky) answered by the candidate. */
    weight: z.number().min(0).max(100).default(0),
    ...MODEL_ROUTING_FIELDS,
    /** Percent (0–100) of the primary's requests copied to the candidate after the answer (shadow). */
    mirrorPercent: z.number().min(0).max(100).default(0),
    /** Which requests may be mirrored (Argo's `setMirrorRoute` match); empty = all. */
    mirrorMatch: z.array(MirrorMatchSchema).default([]),
  })
  .strict()
  .refine((c) => c.weight === 0 || c.candidate !== null, {
    message: "a weight above 0 needs a candidate",
    path: ["weight"],
  })
  .refine((c) => c.mirrorPercent === 0 || c.candidate !== null, {
    message: "a mirror percentage above 0 needs a candidate",
    path: ["mirrorPercent"],
  });

export type ModelRouterConfig = z.infer<typeof ModelRouterConfigSchema>;
export type ModelRouterConfigInput = z.input<typeof ModelRouterConfigSchema>;

/** The value at a dot path of a JSON value; undefined when any step is missing. */
export function valueAt(value: unknown, path: string): unknown {
  if (path === "") return value;
  let current: unknown = value;
  for (const step of path.split(".")) {
    if (current === null || typeof current !== "object") return undefined;
    current = Array.isArray(current)
      ? /^\d+$/.test(step)
        ? current[Number(step)]
        : undefined
      : (current as Record<string, unknown>)[step];
  }
  return current;
}

/** The comparison of two predictions: whether they agree, and for scores how far apart they are. */
export interface Agreement {
  readonly agree: boolean;
  /** |candidate - primary| for scores. */
  readonly absDiff?: number;
  /** |candidate - primary| / |primary| for scores (absent when the primary is 0). */
  readonly relDiff?: number;
}

/** Compares the candidate's prediction with the primary's; undefined when either is missing. */
export function comparePredictions(
  settings: CompareSettings,
  primary: unknown,
  candidate: unknown,
): Agreement | undefined {
  if (primary === undefined || candidate === undefined) return undefined;
  if (settings.kind === "class") return { agree: JSON.stringify(primary) === JSON.stringify(candidate) };
  if (typeof primary !== "number" || typeof candidate !== "number") return { agree: false };
  const absDiff = Math.abs(candidate - primary);
  const relDiff = primary === 0 ? undefined : absDiff / Math.abs(primary);
  const agree = absDiff <= settings.absolute || (relDiff !== undefined && relDiff <= settings.relative);
  return { agree, absDiff, ...(relDiff !== undefined ? { relDiff } : {}) };
}
