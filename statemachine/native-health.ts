import { z } from "zod";
import { type Origin, zodProblems } from "./analysis-resolve.ts";
import { ArgoPrometheusSchema, IntOrString } from "./argo-schema.ts";
import { parseDuration } from "./duration.ts";
import { JUDGE_PLACEHOLDERS, JUDGE_PLUGIN } from "./judge-load.ts";
import { checkGroupWeights, loadKayentaFields } from "./kayenta-load.ts";
import type { Problem } from "./problems.ts";

/**
 * The native `health` block: the gates a percentage rollout checks during each step's bake, as
 * the native reference writes them — `compare: stable` metrics with `{track}` in their query,
 * judged by ratio and difference on one reading or by Mann-Whitney over the step's series, with
 * an optional score — plus our `judge:` entries for the sequential tests. The block becomes an
 * inline AnalysisTemplate whose metrics are `sfn-rollouts/judge` plugin entries: the same
 * reader and the same run as an Argo-form gate.
 */

const Duration = IntOrString;

/** The Prometheus settings of the native `health` block: Argo's provider fields but the query. */
const PrometheusSettings = ArgoPrometheusSchema.omit({ query: true, insecure: true, rangeQuery: true });

export const HealthSchema = z
  .object({
    /** Time between two readings of the gate during the bake (default 1m). */
    interval: Duration.optional(),
    /** Score thresholds: with them the metrics are combined into one scored gate. */
    analysis: z
      .object({
        pass: z.number().min(0).max(100).optional(),
        marginal: z.number().min(0).max(100).optional(),
        /** With `analysis: kayenta` metrics: Kayenta's percentages of the score by group. */
        groupWeights: z.record(z.string(), z.number().min(0)).optional(),
      })
      .strict()
      .optional(),
    /** The Prometheus the queries go to (default: the controller's `prometheus` prop). */
    prometheus: PrometheusSettings.optional(),
    metrics: z.array(z.unknown()).optional(),
    /** Judges of their own (the sequential tests), written as the `sfn-rollouts/judge` plugin's fields plus a name. */
    judge: z.array(z.unknown()).optional(),
  })
  .strict();
export type Health = z.infer<typeof HealthSchema>;

/** Metric systems of the native reference that the judge cannot read, refused by name. */
const OTHER_SYSTEMS = ["datadog", "newrelic", "elastic", "azure-monitor"];

const HealthMetricSchema = z
  .object({
    name: z.string().min(1),
    compare: z.literal("stable", {
      message: "only compare: stable metrics are read (the candidate against the stable version)",
    }),
    query: z.string().min(1),
    provider: z.string().optional(),
    maxRatio: z.number().positive().optional(),
    minRatio: z.number().positive().optional(),
    maxDelta: z.number().min(0).optional(),
    direction: z.enum(["increase", "decrease", "either"]).optional(),
    samplesQuery: z.string().min(1).optional(),
    minSamples: z.number().int().min(0).optional(),
    analysis: z
      .enum(["mann-whitney", "kayenta"], {
        message: "analysis is mann-whitney or kayenta, or absent for a threshold on one reading",
      })
      .optional(),
    step: Duration.optional(),
    lookback: Duration.optional(),
    minPoints: z.number().int().positive().optional(),
    alpha: z.number().gt(0).lt(1).optional(),
    weight: z.number().min(0).optional(),
    critical: z.boolean().optional(),
    /** A series' NaN points, with either analysis: removed (default) or counted as 0. */
    nanStrategy: z.enum(["remove", "replace"]).optional(),
    // Kayenta's own metric settings, with analysis: kayenta (checked by loadKayentaFields).
    groups: z.array(z.string()).optional(),
    outliers: z.unknown().optional(),
    effectSize: z.unknown().optional(),
    mustHaveData: z.unknown().optional(),
    muted: z.unknown().optional(),
  })
  .strict();
type HealthMetric = z.infer<typeof HealthMetricSchema>;

/** The values `{track}`, `{application}` and `{version}` take for each side. */
const SIDE_VALUES = {
  candidate: { track: "{{rollout.latest}}", version: "{{rollout.latest}}" },
  stable: { track: "{{rollout.stable}}", version: "{{rollout.latest}}" },
} as const;

/** CloudWatch accepts periods of 1, 5, 10, 30 seconds or multiples of 60: round up to one. */
export function cloudWatchPeriod(seconds: number): number {
  for (const p of [1, 5, 10, 30]) if (seconds <= p) return p;
  return Math.ceil(seconds / 60) * 60;
}

interface Context {
  origin: Origin;
  /** Where the health block is in the document (`health`, `rollout.health`). */
  path: string;
  application: string;
  /** Seconds of bake: the readings' span. */
  bake: number;
  problems: Problem[];
}

const seconds = (value: string | number, path: string, ctx: Context): number | undefined => {
  const d = parseDuration(value);
  if ("error" in d) {
    ctx.problems.push({ ...ctx.origin, path, message: d.error });
    return undefined;
  }
  return d.seconds;
};

/**
 * The inline template of a health block (`{metrics: [...]}` in the Argo shape, each metric a judge),
 * or undefined with problems reported at the user's own field paths.
 */
export function healthTemplate(raw: unknown, ctx: Context): { metrics: unknown[] } | undefined {
  const before = ctx.problems.length;
  const parsed = HealthSchema.safeParse(raw);
  if (!parsed.success) {
    ctx.problems.push(...zodProblems(parsed.error, ctx.origin, ctx.path));
    return undefined;
  }
  const health = parsed.data;
  const interval = healthInterval(health, ctx);
  const { metrics, indexes } = healthMetrics(health, ctx);
  checkNames(metrics, health, ctx);
  const checks = metrics.map((m, i) => comparative(m, `${ctx.path}.metrics[${indexes[i]}]`, health, ctx));
  const scoredByKayenta = kayentaFields(metrics, indexes, health, ctx);
  if (ctx.problems.length !== before || interval === undefined) return undefined;

  // Readings at every interval through the bake, the last one at its end.
  const count = Math.max(1, Math.ceil(ctx.bake / interval));
  const timing: Timing = {
    interval: `${interval}s`,
    initialDelay: `${Math.min(interval, ctx.bake)}s`,
    count,
  };
  return {
    metrics: [...gates(metrics, checks, health, timing, scoredByKayenta), ...judgeEntries(health, timing)],
  };
}

/** When a health block's metrics read: every interval through the bake. */
interface Timing {
  interval: string;
  initialDelay: string;
  count: number;
}

/** Seconds between two readings: the block's `interval`, which must be more than 0, or a minute. */
function healthInterval(health: Health, ctx: Context): number | undefined {
  const interval = health.interval === undefined ? 60 : seconds(health.interval, `${ctx.path}.interval`, ctx);
  if (interval !== undefined && interval <= 0) {
    ctx.problems.push({
      ...ctx.origin,
      path: `${ctx.path}.interval`,
      message: "interval must be more than 0",
    });
  }
  return interval;
}

/**
 * The block's metrics that read, each with its index in the block (for the paths of its problems);
 * a metric of another system, or that does not fit the schema, is reported and left out.
 */
function healthMetrics(health: Health, ctx: Context): { metrics: HealthMetric[]; indexes: number[] } {
  const metrics: HealthMetric[] = [];
  const indexes: number[] = [];
  (health.metrics ?? []).forEach((m, i) => {
    const path = `${ctx.path}.metrics[${i}]`;
    const provider = (m as { provider?: unknown } | null)?.provider;
    if (typeof provider === "string" && OTHER_SYSTEMS.includes(provider)) {
      ctx.problems.push({
        ...ctx.origin,
        path: `${path}.provider`,
        message: `the ${provider} provider is not supported: health metrics read prometheus or cloudwatch`,
      });
      return;
    }
    const one = HealthMetricSchema.safeParse(m);
    if (!one.success) {
      ctx.problems.push(...zodProblems(one.error, ctx.origin, path));
      return;
    }
    if (one.data.provider !== undefined && !["prometheus", "cloudwatch"].includes(one.data.provider)) {
      ctx.problems.push({
        ...ctx.origin,
        path: `${path}.provider`,
        message: `provider must be prometheus or cloudwatch, got "${one.data.provider}"`,
      });
      return;
    }
    metrics.push(one.data);
    indexes.push(i);
  });
  return { metrics, indexes };
}

/** The metrics' and judge entries' names are the gate's: each once, and at least one. */
function checkNames(metrics: readonly HealthMetric[], health: Health, ctx: Context): void {
  const names = new Set<string>();
  for (const [i, name] of [
    ...metrics.map((m) => m.name),
    ...(health.judge ?? []).map((j) => (j as { name?: unknown } | null)?.name),
  ].entries()) {
    if (typeof name === "string" && names.has(name)) {
      ctx.problems.push({
        ...ctx.origin,
        path: ctx.path,
        message: `metric "${name}" appears twice (entry ${i + 1})`,
      });
    }
    if (typeof name === "string") names.add(name);
  }
  if (metrics.length === 0 && (health.judge ?? []).length === 0) {
    ctx.problems.push({
      ...ctx.origin,
      path: ctx.path,
      message: "a health block needs metrics or judge entries",
    });
  }
}

/**
 * The gates of the block's metrics: one Kayenta judge scoring them all, or one score of them when
 * the block has `analysis` thresholds, or else a gate per metric.
 */
function gates(
  metrics: readonly HealthMetric[],
  checks: ReadonlyArray<Record<string, unknown> | undefined>,
  health: Health,
  timing: Timing,
  scoredByKayenta: { groupWeights?: Record<string, number> } | undefined,
): unknown[] {
  if (scoredByKayenta) {
    const judge = kayentaJudge(
      metrics,
      checks as Array<Record<string, unknown>>,
      health,
      scoredByKayenta.groupWeights,
    );
    return [{ name: "health", ...timing, provider: { plugin: { [JUDGE_PLUGIN]: judge } } }];
  }
  if (health.analysis) {
    const score = {
      test: "score",
      ...(health.analysis.pass !== undefined ? { pass: health.analysis.pass } : {}),
      ...(health.analysis.marginal !== undefined ? { marginal: health.analysis.marginal } : {}),
      metrics: metrics.map((m, i) => ({
        name: m.name,
        ...(m.weight !== undefined ? { weight: m.weight } : {}),
        ...(m.critical !== undefined ? { critical: m.critical } : {}),
        ...checks[i],
      })),
    };
    return [{ name: "health", ...timing, provider: { plugin: { [JUDGE_PLUGIN]: score } } }];
  }
  return metrics.map((m, i) => ({
    name: m.name,
    ...timing,
    provider: { plugin: { [JUDGE_PLUGIN]: checks[i] } },
  }));
}

/** The block's `judge:` entries, each a gate of its own; one that is not an object the reader refuses. */
function judgeEntries(health: Health, timing: Timing): unknown[] {
  const out: unknown[] = [];
  for (const raw of health.judge ?? []) {
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
      out.push(raw);
      continue;
    }
    const { name, ...judge } = raw as Record<string, unknown>;
    out.push({ name, ...timing, provider: { plugin: { [JUDGE_PLUGIN]: judge } } });
  }
  return out;
}

/** A `compare: stable` metric as the judge's `comparative` test. */
function comparative(
  m: HealthMetric,
  path: string,
  health: Health,
  ctx: Context,
): Record<string, unknown> | undefined {
  const series = m.analysis !== undefined;
  const step = m.step === undefined ? 15 : seconds(m.step, `${path}.step`, ctx);
  const lookback = m.lookback === undefined ? undefined : seconds(m.lookback, `${path}.lookback`, ctx);
  if (step === undefined || (m.lookback !== undefined && lookback === undefined)) return undefined;
  if (!series) {
    for (const field of ["step", "lookback", "minPoints", "alpha", "nanStrategy"] as const) {
      if (m[field] !== undefined) {
        ctx.problems.push({
          ...ctx.origin,
          path: `${path}.${field}`,
          message: `${field} applies to analysis: mann-whitney`,
        });
        return undefined;
      }
    }
  }
  if (m.minSamples !== undefined && m.samplesQuery === undefined) {
    ctx.problems.push({
      ...ctx.origin,
      path: `${path}.minSamples`,
      message: "minSamples counts what samplesQuery returns: give samplesQuery",
    });
    return undefined;
  }
  const cloudwatch = m.provider === "cloudwatch";
  const read = (
    query: string,
    side: keyof typeof SIDE_VALUES,
    asSeries: boolean,
  ): Record<string, unknown> => {
    const text = query
      .replaceAll("{track}", SIDE_VALUES[side].track)
      .replaceAll("{version}", SIDE_VALUES[side].version)
      .replaceAll("{application}", ctx.application);
    if (cloudwatch) {
      return {
        cloudWatch: {
          ...(lookback !== undefined ? { interval: `${lookback}s` } : {}),
          metricDataQueries: [{ id: "m", expression: text, period: cloudWatchPeriod(step) }],
        },
        value: "result[0].Values",
        ...(lookback === undefined ? { sinceStart: true } : {}),
      };
    }
    const range = lookback !== undefined ? `${lookback}s` : JUDGE_PLACEHOLDERS.elapsed;
    return {
      prometheus: {
        ...health.prometheus,
        address: health.prometheus?.address ?? "",
        query: asSeries ? `(${text})[${range}:${step}s]` : text,
      },
    };
  };
  return {
    test: "comparative",
    data: series ? "series" : "value",
    ...(m.direction !== undefined ? { direction: m.direction } : {}),
    ...(m.maxRatio !== undefined ? { maxRatio: m.maxRatio } : {}),
    ...(m.minRatio !== undefined ? { minRatio: m.minRatio } : {}),
    ...(m.maxDelta !== undefined ? { maxDelta: m.maxDelta } : {}),
    ...(m.alpha !== undefined ? { alpha: m.alpha } : {}),
    ...(m.minPoints !== undefined ? { minPoints: m.minPoints } : {}),
    ...(m.nanStrategy !== undefined && m.analysis === "mann-whitney" ? { nanStrategy: m.nanStrategy } : {}),
    ...(m.samplesQuery !== undefined ? { minSamples: m.minSamples ?? 0 } : {}),
    candidate: {
      value: read(m.query, "candidate", series),
      ...(m.samplesQuery !== undefined ? { n: read(m.samplesQuery, "candidate", false) } : {}),
    },
    stable: { value: read(m.query, "stable", series) },
  };
}

/** What only one of the two analyses reads, with where the other one says it. */
const MANN_WHITNEY_ONLY = {
  maxRatio: "Kayenta fails a metric from effectSize.allowedIncrease",
  minRatio: "Kayenta fails a metric from effectSize.allowedDecrease",
  maxDelta: "Kayenta compares ratios of the means (effectSize), not differences",
  alpha: "Kayenta decides by the shift's confidence interval, not a p-value",
  minPoints: "Kayenta classifies any number of points (none is Nodata)",
  samplesQuery: "Kayenta counts no requests (mustHaveData fails a metric without data)",
  minSamples: "Kayenta counts no requests (mustHaveData fails a metric without data)",
} as const;
const KAYENTA_ONLY = ["groups", "outliers", "effectSize", "mustHaveData", "muted"] as const;
/** The Kayenta settings a health metric may carry with analysis: kayenta. */
const KAYENTA_FIELDS = [
  "groups",
  "direction",
  "nanStrategy",
  "outliers",
  "effectSize",
  "critical",
  "mustHaveData",
  "muted",
] as const;

/**
 * Whether the block is scored by Kayenta (`analysis: kayenta` on its metrics, which then must all
 * say so: one score cannot mix two analyses), with the group weights it gets: the block's
 * `analysis.groupWeights`, or, for metrics without `groups`, their `weight`s as shares of 100.
 * Undefined when it is not, or problems were reported.
 */
function kayentaFields(
  metrics: readonly HealthMetric[],
  indexes: readonly number[],
  health: Health,
  ctx: Context,
): { groupWeights?: Record<string, number> } | undefined {
  const at = (i: number, field: string) => `${ctx.path}.metrics[${indexes[i]}].${field}`;
  const problem = (path: string, message: string) => ctx.problems.push({ ...ctx.origin, path, message });
  const kayenta = metrics.find((m) => m.analysis === "kayenta");
  if (!kayenta) {
    metrics.forEach((m, i) => {
      for (const field of KAYENTA_ONLY) {
        if (m[field] !== undefined) problem(at(i, field), `${field} applies to analysis: kayenta`);
      }
    });
    if (health.analysis?.groupWeights !== undefined) {
      problem(`${ctx.path}.analysis.groupWeights`, "groupWeights applies to metrics with analysis: kayenta");
    }
    return undefined;
  }
  const before = ctx.problems.length;
  const scored: Array<{ groups: readonly string[]; muted: boolean }> = [];
  metrics.forEach((m, i) => {
    if (m.analysis !== "kayenta") {
      problem(
        at(i, "analysis"),
        `metric "${kayenta.name}" is analysis: kayenta, which scores the whole health block: every metric must be analysis: kayenta`,
      );
      return;
    }
    for (const [field, instead] of Object.entries(MANN_WHITNEY_ONLY)) {
      if (m[field as keyof typeof MANN_WHITNEY_ONLY] !== undefined) {
        problem(at(i, field), `${field} applies to analysis: mann-whitney; ${instead}`);
      }
    }
    // Kayenta's settings, checked here so that a problem names the user's field.
    const own = Object.fromEntries(KAYENTA_FIELDS.filter((f) => m[f] !== undefined).map((f) => [f, m[f]]));
    const fields = loadKayentaFields(own, `${ctx.path}.metrics[${indexes[i]}]`, { report: problem });
    if (fields) scored.push({ groups: fields.groups ?? [m.name], muted: fields.muted });
  });
  const weighted = metrics.some((m) => m.weight !== undefined);
  const grouped = metrics.some((m) => m.groups !== undefined) || health.analysis?.groupWeights !== undefined;
  if (weighted && grouped) {
    metrics.forEach((m, i) => {
      if (m.weight !== undefined) {
        problem(
          at(i, "weight"),
          "Kayenta weighs groups, not metrics: with groups or analysis.groupWeights, weigh the groups in analysis.groupWeights",
        );
      }
    });
  }
  if (ctx.problems.length !== before) return undefined;
  if (!weighted) {
    const groupWeights = health.analysis?.groupWeights;
    if (groupWeights === undefined) return {};
    return checkGroupWeights(groupWeights, scored, `${ctx.path}.analysis.groupWeights`, problem)
      ? { groupWeights }
      : undefined;
  }
  // Each metric is a group of its own: its weight becomes its group's share of 100.
  const total = metrics.reduce((sum, m) => sum + (m.weight ?? 1), 0);
  if (total === 0) {
    problem(`${ctx.path}.metrics`, "every metric weighs 0: nothing would be scored");
    return undefined;
  }
  return { groupWeights: Object.fromEntries(metrics.map((m) => [m.name, (100 * (m.weight ?? 1)) / total])) };
}

/** The `kayenta` judge of a health block: each metric's Kayenta fields and the series its analysis reads. */
function kayentaJudge(
  metrics: readonly HealthMetric[],
  checks: ReadonlyArray<Record<string, unknown>>,
  health: Health,
  groupWeights: Record<string, number> | undefined,
): Record<string, unknown> {
  return {
    test: "kayenta",
    ...(health.analysis?.pass !== undefined ? { pass: health.analysis.pass } : {}),
    ...(health.analysis?.marginal !== undefined ? { marginal: health.analysis.marginal } : {}),
    ...(groupWeights !== undefined ? { groupWeights } : {}),
    metrics: metrics.map((m, i) => {
      const { candidate, stable } = checks[i] as {
        candidate: { value: unknown };
        stable: { value: unknown };
      };
      const own = Object.fromEntries(
        KAYENTA_FIELDS.filter((field) => m[field] !== undefined).map((field) => [field, m[field]]),
      );
      return { name: m.name, ...own, candidate: { value: candidate.value }, stable: { value: stable.value } };
    }),
  };
}
