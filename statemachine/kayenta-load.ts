import { z } from "zod";
import { DirectionSchema, type JudgeSide, type JudgeSpec, type KayentaMetric } from "./judge-spec.ts";
import { issueMessage, joinPath } from "./problems.ts";

/**
 * Reads a `test: kayenta` judge — a whole Kayenta canary config: metrics with Kayenta's
 * per-metric settings, each reading a series of both versions, the groups' weights and the score
 * thresholds — with Kayenta's defaults applied and every contradiction refused at its field.
 */

/**
 * Kayenta's defaults (NetflixACAJudge): a metric fails on a change either way, NaN points are
 * removed, outliers kept (removed: beyond 3 × IQR), effect thresholds at no change (a mean ratio
 * of 1, a CLES of 0.5); the classifier's band is 0.25 of the estimated shift and its interval 98%.
 */
export const KAYENTA_DEFAULTS = {
  direction: "either",
  nanStrategy: "remove",
  outlierStrategy: "keep",
  outlierFactor: 3,
  measure: "meanRatio",
  tolerance: 0.25,
  confidence: 0.98,
} as const;

/** Weights that add up to 100 within this much are taken as adding up to 100 (percentages computed from ratios). */
const WEIGHT_SLACK = 1e-9;

const EffectSizeInput = z
  .object({
    measure: z.enum(["meanRatio", "cles"]).optional(),
    allowedIncrease: z.number().nonnegative().optional(),
    allowedDecrease: z.number().nonnegative().optional(),
    criticalIncrease: z.number().nonnegative().optional(),
    criticalDecrease: z.number().nonnegative().optional(),
  })
  .strict();

/** Kayenta's own settings of a metric, as users write them (the native `analysis: kayenta` metrics too). */
const FieldsInput = z
  .object({
    groups: z.array(z.string().min(1)).min(1).optional(),
    direction: DirectionSchema.optional(),
    nanStrategy: z.enum(["remove", "replace"]).optional(),
    outliers: z
      .object({
        strategy: z.enum(["keep", "remove"]).optional(),
        outlierFactor: z.number().positive().optional(),
      })
      .strict()
      .optional(),
    effectSize: EffectSizeInput.optional(),
    critical: z.boolean().optional(),
    mustHaveData: z.boolean().optional(),
    muted: z.boolean().optional(),
  })
  .strict();

const MetricInput = FieldsInput.extend({
  name: z.string().min(1),
  candidate: z.unknown(),
  stable: z.unknown(),
}).strict();

/** A metric's Kayenta settings with the defaults applied. */
export type KayentaFields = Omit<KayentaMetric, "name" | "candidate" | "stable" | "groups"> & {
  groups?: string[];
};

/** What the judge's loader gives this one: the top-level fields, problem reporting, and how a side is read. */
export interface KayentaLoadInput {
  metrics?: unknown[];
  groupWeights?: Record<string, number>;
  pass?: number;
  marginal?: number;
  tolerance?: number;
  confidence?: number;
}

export interface KayentaLoadContext {
  report(path: string, message: string): void;
  /** Reads one version's `value` series reading at `path`, as every judge reads a side. */
  side(raw: unknown, path: string, which: "candidate" | "stable"): JudgeSide | undefined;
  pass: number;
  marginal: number;
}

/** The effect-size thresholds' range for a measure: what "an increase" and "a decrease" are in it. */
function checkThresholds(
  effect: z.infer<typeof EffectSizeInput>,
  path: string,
  report: (path: string, message: string) => void,
): boolean {
  const cles = effect.measure === "cles";
  const neutral = cles ? 0.5 : 1;
  const unit = cles
    ? "a common language effect size (0.5 is no change)"
    : "a ratio of the means (1 is no change)";
  let ok = true;
  for (const field of ["allowedIncrease", "criticalIncrease"] as const) {
    const v = effect[field];
    if (v !== undefined && (v < neutral || (cles && v > 1))) {
      report(`${path}.${field}`, `${field} is ${unit}: from ${neutral}${cles ? " to 1" : " up"}, got ${v}`);
      ok = false;
    }
  }
  for (const field of ["allowedDecrease", "criticalDecrease"] as const) {
    const v = effect[field];
    if (v !== undefined && v > neutral) {
      report(`${path}.${field}`, `${field} is ${unit}: from 0 to ${neutral}, got ${v}`);
      ok = false;
    }
  }
  return ok;
}

function report(
  issues: readonly { path: readonly PropertyKey[]; code: string; message: string }[],
  path: string,
  ctx: Pick<KayentaLoadContext, "report">,
): void {
  for (const issue of issues) {
    const field = joinPath(issue.path);
    ctx.report(field ? `${path}.${field}` : path, issueMessage(issue));
  }
}

/**
 * A metric's Kayenta settings (`groups`, `direction`, `nanStrategy`, `outliers`, `effectSize`,
 * `critical`, `mustHaveData`, `muted`) with Kayenta's defaults applied, every problem reported under
 * `path`: a wrong value, and what contradicts itself (a threshold for a change the metric never
 * fails on, critical thresholds on a metric that is not critical, an outlier factor for outliers
 * kept, a muted critical metric, mustHaveData with NaN points replaced).
 */
export function loadKayentaFields(
  raw: Record<string, unknown>,
  path: string,
  ctx: Pick<KayentaLoadContext, "report">,
): KayentaFields | undefined {
  const parsed = FieldsInput.safeParse(raw);
  if (!parsed.success) {
    report(parsed.error.issues, path, ctx);
    return undefined;
  }
  const m = parsed.data;
  let ok = true;
  const fail = (field: string, message: string) => {
    ok = false;
    ctx.report(`${path}.${field}`, message);
  };
  const direction = m.direction ?? KAYENTA_DEFAULTS.direction;
  const effect = m.effectSize ?? {};
  const measure = effect.measure ?? KAYENTA_DEFAULTS.measure;
  const neutral = measure === "cles" ? 0.5 : 1;
  if (!checkThresholds(effect, `${path}.effectSize`, ctx.report)) ok = false;
  // A threshold for a change the metric never fails on, or a critical one on a metric that is not.
  for (const [field, needs] of [
    ["allowedIncrease", "increase"],
    ["criticalIncrease", "increase"],
    ["allowedDecrease", "decrease"],
    ["criticalDecrease", "decrease"],
  ] as const) {
    if (effect[field] === undefined) continue;
    if (direction !== needs && direction !== "either") {
      fail(
        `effectSize.${field}`,
        `${field} does not apply to direction: ${direction} (${needs === "increase" ? "an increase" : "a decrease"} never fails this metric)`,
      );
    } else if (field.startsWith("critical") && m.critical !== true) {
      fail(`effectSize.${field}`, `${field} applies to a critical metric: add critical: true`);
    }
  }
  const strategy = m.outliers?.strategy ?? KAYENTA_DEFAULTS.outlierStrategy;
  if (m.outliers?.outlierFactor !== undefined && strategy !== "remove") {
    fail("outliers.outlierFactor", "outlierFactor applies to outliers.strategy: remove");
  }
  if (m.muted === true && m.critical === true) {
    fail("critical", "a muted metric is left out of the score: it cannot fail the canary as critical");
  }
  if (m.mustHaveData === true && m.nanStrategy === "replace") {
    fail(
      "mustHaveData",
      "with nanStrategy: replace a version without data passes (Kayenta): mustHaveData would never apply",
    );
  }
  if (!ok) return undefined;
  return {
    ...(m.groups !== undefined ? { groups: m.groups } : {}),
    direction,
    nanStrategy: m.nanStrategy ?? KAYENTA_DEFAULTS.nanStrategy,
    outliers: { strategy, outlierFactor: m.outliers?.outlierFactor ?? KAYENTA_DEFAULTS.outlierFactor },
    effectSize: {
      measure,
      allowedIncrease: effect.allowedIncrease ?? neutral,
      allowedDecrease: effect.allowedDecrease ?? neutral,
      criticalIncrease: effect.criticalIncrease ?? neutral,
      criticalDecrease: effect.criticalDecrease ?? neutral,
    },
    critical: m.critical === true,
    mustHaveData: m.mustHaveData === true,
    muted: m.muted === true,
  };
}

/** One metric, defaults applied; undefined (problems reported) when it cannot be used. */
function loadMetric(raw: unknown, path: string, ctx: KayentaLoadContext): KayentaMetric | undefined {
  const parsed = MetricInput.safeParse(raw);
  if (!parsed.success) {
    report(parsed.error.issues, path, ctx);
    return undefined;
  }
  const { name, candidate: rawCandidate, stable: rawStable, ...rest } = parsed.data;
  const fields = loadKayentaFields(rest, path, ctx);
  const candidate = ctx.side(rawCandidate, `${path}.candidate`, "candidate");
  const stable = ctx.side(rawStable, `${path}.stable`, "stable");
  if (!fields || !candidate || !stable) return undefined;
  return { name, ...fields, groups: fields.groups ?? [name], candidate, stable };
}

/**
 * Refuses group weights (at `path`) that name no group of a scored metric, or that cannot add up to
 * the 100 Kayenta shares out: all groups weighted but not adding up to 100, or nothing left for the
 * groups without a weight.
 */
export function checkGroupWeights(
  weights: Record<string, number>,
  metrics: ReadonlyArray<{ groups: readonly string[]; muted: boolean }>,
  path: string,
  report: (path: string, message: string) => void,
): boolean {
  const groups = new Set(metrics.filter((m) => !m.muted).flatMap((m) => m.groups));
  let ok = true;
  for (const group of Object.keys(weights)) {
    if (!groups.has(group)) {
      report(
        `${path}.${group}`,
        `no scored metric is in group "${group}" (groups: ${[...groups].join(", ")})`,
      );
      ok = false;
    }
  }
  if (!ok) return false;
  const sum = Object.values(weights).reduce((a, b) => a + b, 0);
  const unweighted = [...groups].filter((g) => !Object.hasOwn(weights, g));
  if (unweighted.length === 0 && Math.abs(sum - 100) > WEIGHT_SLACK) {
    report(path, `the group weights are percentages of the score: they add up to ${sum}, not 100`);
    return false;
  }
  if (unweighted.length > 0 && sum >= 100 - WEIGHT_SLACK) {
    report(
      path,
      `the groups without a weight (${unweighted.join(", ")}) share what the weights leave of 100, and they add up to ${sum}`,
    );
    return false;
  }
  return true;
}

/** Reads a `kayenta` judge; undefined (with problems reported) when it cannot be used. */
export function loadKayenta(
  input: KayentaLoadInput,
  base: string,
  ctx: KayentaLoadContext,
): JudgeSpec | undefined {
  let ok = true;
  if (ctx.marginal > ctx.pass) {
    ctx.report(`${base}.marginal`, `marginal (${ctx.marginal}) must not exceed pass (${ctx.pass})`);
    ok = false;
  }
  if (!input.metrics) {
    ctx.report(`${base}.metrics`, "a kayenta judge needs its metrics");
    return undefined;
  }
  const metrics: KayentaMetric[] = [];
  const names = new Set<string>();
  input.metrics.forEach((raw, i) => {
    const path = `${base}.metrics[${i}]`;
    const name = (raw as { name?: unknown } | null)?.name;
    if (typeof name === "string" && names.has(name)) {
      ctx.report(`${path}.name`, `metric "${name}" appears twice`);
      ok = false;
    }
    if (typeof name === "string") names.add(name);
    const metric = loadMetric(raw, path, ctx);
    if (metric) metrics.push(metric);
    else ok = false;
  });
  if (!ok) return undefined;
  if (metrics.every((m) => m.muted)) {
    ctx.report(`${base}.metrics`, "every metric is muted: nothing would be scored");
    return undefined;
  }
  const groupWeights = input.groupWeights ?? {};
  if (!checkGroupWeights(groupWeights, metrics, `${base}.groupWeights`, ctx.report)) return undefined;
  return {
    test: "kayenta",
    metrics,
    groupWeights,
    pass: ctx.pass,
    marginal: ctx.marginal,
    tolerance: input.tolerance ?? KAYENTA_DEFAULTS.tolerance,
    confidence: input.confidence ?? KAYENTA_DEFAULTS.confidence,
  };
}
