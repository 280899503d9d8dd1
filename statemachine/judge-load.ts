import { z } from "zod";
import { fastLatencySamples, fastRateSamples } from "../functions/judges/fast.ts";
import { UNSUPPORTED_PROVIDERS } from "./argo-schema.ts";
import { compileExpression } from "./conditions.ts";
import { parseDuration } from "./duration.ts";
import {
  DirectionSchema,
  type FastEffect,
  type GateBudget,
  JUDGE_TESTS,
  type JudgeCheck,
  type JudgeData,
  JudgeDataSchema,
  type JudgeDirection,
  type JudgeSide,
  type JudgeSpec,
  type JudgeSpecOf,
  type JudgeTest,
  type Reading,
  type ScoredCheck,
} from "./judge-spec.ts";
import { loadKayenta } from "./kayenta-load.ts";
import { issueMessage, joinPath } from "./problems.ts";
import type { Provider } from "./providers.ts";
import { samplesOneProportion, samplesPerSide } from "./sample-size.ts";

/**
 * Reads a judge as users write it — the Argo metric plugin entry `sfn-rollouts/judge`, or a native
 * `health` metric translated into the same shape — into the normalized {@link JudgeSpec}, with
 * every default applied and every problem reported at its field path. One reader for both forms
 * is what makes an Argo-form and a native-form gate compile to the same run.
 */

/** The plugin name under Argo's `provider.plugin`. */
export const JUDGE_PLUGIN = "sfn-rollouts/judge";

/** Placeholders a judge's queries may use; the reader fills them at every look. */
export const JUDGE_PLACEHOLDERS = {
  /** Time since the analysis started, as a Prometheus range (`95s`). */
  elapsed: "{{judge.elapsed}}",
  /** The same in whole seconds (`95`), for web URLs. */
  elapsedSeconds: "{{judge.elapsedSeconds}}",
  /** When the analysis started, RFC 3339. */
  since: "{{judge.since}}",
  /** The look's time, RFC 3339. */
  now: "{{judge.now}}",
} as const;

/**
 * Safe defaults. Fixed-horizon tests on counts: 500 requests per side before any decision (the
 * canary gate's floor: at a 1% error rate fewer requests hold fewer than 5 expected errors, too
 * few for one look to tell a regression from luck); on samples, 150 per side (the model-rollout
 * figure, where the normal approximation of Mann-Whitney is excellent). Sequential tests are valid
 * from their first sample: their minimum is derived from the regression they must catch at once
 * (`fast`: ten times the stable version's error rate, assumed 1%, or twice as slow with ln(latency)
 * spread 0.5), so a severe regression stops at the first look that can see it.
 */
export const JUDGE_DEFAULTS = {
  alpha: 0.05,
  power: 0.8,
  direction: "increase" as JudgeDirection,
  minSamplesCounts: 500,
  minSamplesSamples: 150,
  fastRate: { ratio: 10, baseline: 0.01 },
  fastLatency: { ratio: 2, sigma: 0.5 },
  minPoints: 5,
  concentration: 2,
  g: 0.1,
  pass: 95,
  marginal: 75,
  label: "bad",
} as const;

/** The canary gate's policy (its threshold reference). */
export const CANARY_GATE_DEFAULTS = {
  p95BudgetRatio: 1.2,
  errorRateCeiling: 0.005,
  minSampleCount: 500,
  fullRolloutDwell: 2,
  rollbackCooldownSeconds: 3600,
  maxRollbacksPerHour: 3,
} as const;

/** What the loader needs from its caller: provider normalization and problem reporting. */
export interface JudgeLoadContext {
  /** Normalizes one provider written the Argo way (`{prometheus: {...}}`); reports under `path`. */
  provider(raw: Record<string, unknown>, path: string): Provider | undefined;
  report(path: string, message: string): void;
}

const READING_PROVIDERS = ["prometheus", "web", "cloudWatch", "samples"] as const;
/** Providers a reading cannot use, recognised so the message can name them. */
const OTHER_PROVIDERS: readonly string[] = [
  ...UNSUPPORTED_PROVIDERS,
  "datadog",
  "newRelic",
  "graphite",
  "influxdb",
  "wavefront",
  "kayenta",
  "job",
  "plugin",
];

const InputSchema = z
  .object({
    test: z.enum(JUDGE_TESTS),
    alpha: z.number().gt(0).lt(1).optional(),
    direction: DirectionSchema.optional(),
    minEffect: z.number().min(0).optional(),
    minSamples: z.number().int().min(0).optional(),
    samples: z.number().int().positive().optional(),
    data: JudgeDataSchema.optional(),
    candidate: z.unknown().optional(),
    stable: z.unknown().optional(),
    label: z.string().min(1).max(40).optional(),
    baseline: z.number().gt(0).lt(1).optional(),
    detect: z.number().gt(0).lt(1).optional(),
    power: z.number().gt(0).lt(1).optional(),
    limit: z.number().gt(0).lt(1).optional(),
    method: z.enum(["normal", "exact"]).optional(),
    allocation: z.number().gt(0).lt(1).optional(),
    concentration: z.number().positive().optional(),
    g: z.number().positive().optional(),
    maxRatio: z.number().positive().optional(),
    minRatio: z.number().positive().optional(),
    maxDelta: z.number().min(0).optional(),
    minPoints: z.number().int().positive().optional(),
    nanStrategy: z.enum(["remove", "replace"]).optional(),
    groupWeights: z.record(z.string(), z.number().min(0)).optional(),
    tolerance: z.number().positive().optional(),
    confidence: z.number().gt(0).lt(1).optional(),
    metrics: z.array(z.unknown()).min(1).optional(),
    pass: z.number().min(0).max(100).optional(),
    marginal: z.number().min(0).max(100).optional(),
    p95BudgetRatio: z.number().positive().optional(),
    errorRateCeiling: z.number().gt(0).max(1).optional(),
    minSampleCount: z.number().int().min(0).optional(),
    fullRolloutDwell: z.number().int().positive().optional(),
    rollbackCooldown: z.union([z.number(), z.string()]).optional(),
    maxRollbacksPerHour: z.number().int().positive().optional(),
    fast: z.number().gt(1).optional(),
    sigma: z.number().positive().optional(),
    maxBadRate: z.number().gt(0).lt(1).optional(),
    maxP95Ms: z.number().positive().optional(),
    unit: z.enum(["ms", "s"]).optional(),
  })
  .strict();
type Input = z.infer<typeof InputSchema>;

const STATISTICAL = ["alpha", "direction", "minEffect", "minSamples", "data", "candidate", "stable"];
/** The fields each test reads: any other field is refused, so a misplaced `limit` is not silently ignored. */
const FIELDS: Record<JudgeTest, readonly string[]> = {
  "two-proportion": [...STATISTICAL, "label", "baseline", "detect", "power", "samples", "maxBadRate"],
  "one-proportion": [
    "alpha",
    "direction",
    "minEffect",
    "minSamples",
    "data",
    "candidate",
    "label",
    "limit",
    "method",
    "detect",
    "power",
    "samples",
  ],
  "mann-whitney": [...STATISTICAL, "samples", "maxP95Ms", "unit"],
  "sequential-rate": [
    ...STATISTICAL,
    "label",
    "allocation",
    "concentration",
    "samples",
    "baseline",
    "fast",
    "maxBadRate",
  ],
  "sequential-latency": [...STATISTICAL, "g", "samples", "fast", "sigma", "maxP95Ms", "unit"],
  comparative: [
    "alpha",
    "direction",
    "minSamples",
    "data",
    "candidate",
    "stable",
    "maxRatio",
    "minRatio",
    "maxDelta",
    "minPoints",
    "nanStrategy",
  ],
  score: ["metrics", "pass", "marginal"],
  kayenta: ["metrics", "groupWeights", "pass", "marginal", "tolerance", "confidence"],
  "canary-gate": [
    "candidate",
    "stable",
    "p95BudgetRatio",
    "errorRateCeiling",
    "minSampleCount",
    "fullRolloutDwell",
    "rollbackCooldown",
    "maxRollbacksPerHour",
  ],
};

/** The data kinds each test can judge; the first is the default. */
const DATA: Record<JudgeTest, readonly JudgeData[]> = {
  "two-proportion": ["counts"],
  "one-proportion": ["counts"],
  "sequential-rate": ["counts"],
  "mann-whitney": ["samples", "histogram"],
  "sequential-latency": ["samples", "histogram", "summary"],
  comparative: ["value", "series"],
  score: [],
  "canary-gate": [],
  kayenta: [],
};

/** Readings each kind of side needs, and the ones it may have. */
function readingNames(
  test: JudgeTest,
  data: JudgeData | undefined,
  which: "candidate" | "stable",
): { required: string[]; optional: string[] } {
  if (test === "canary-gate") {
    return which === "candidate"
      ? { required: ["p95", "errorRate", "n"], optional: [] }
      : { required: ["p95"], optional: [] };
  }
  if (data === "counts") return { required: ["bad", "n"], optional: [] };
  if (test === "comparative" && data === "value" && which === "candidate") {
    return { required: ["value"], optional: ["n"] };
  }
  return { required: ["value"], optional: [] };
}

const PLACEHOLDER = /\{\{\s*judge\.([A-Za-z]+)\s*\}\}/g;

/**
 * Reads one judge; undefined (with problems reported) when it cannot be used. A statistical judge
 * read alone is a budget of its own (its alpha, one gate); the rollout it belongs to shares its
 * budget between its gates when the whole rollout is read (`error-budget.ts`).
 */
export function loadJudge(raw: unknown, base: string, ctx: JudgeLoadContext): JudgeSpec | undefined {
  const judge = loadAny(raw, base, ctx, true) as JudgeSpec | undefined;
  if (!judge || !isBudgeted(judge)) return judge;
  const given = (raw as { alpha?: unknown }).alpha !== undefined;
  return { ...judge, budget: standaloneBudget(judge.alpha, given) };
}

/** The tests whose false rollbacks a rollout's error budget bounds: a test at a level alpha. */
export function isBudgeted(judge: JudgeSpec): judge is Extract<JudgeSpec, { budget?: unknown }> {
  return (
    judge.test === "two-proportion" ||
    judge.test === "one-proportion" ||
    judge.test === "mann-whitney" ||
    judge.test === "sequential-rate" ||
    judge.test === "sequential-latency"
  );
}

/** The budget of a gate read alone: all of its alpha, one decision. */
function standaloneBudget(alpha: number, given: boolean): GateBudget {
  return { rollout: alpha, gate: "gate", share: alpha, decisions: 1, given, carriedFrom: [] };
}

/**
 * Reads a judge of any test, or a score's metric when not `top`: its input, the fields its test
 * reads, then the score, Kayenta or the test with sides, each by its own reader.
 */
function loadAny(
  raw: unknown,
  base: string,
  ctx: JudgeLoadContext,
  top: boolean,
): JudgeSpec | JudgeCheck | undefined {
  const input = parseInput(raw, base, ctx, top);
  if (!input) return undefined;
  const reader = new JudgeReader(input, base, ctx);
  reader.refuseFieldsThatDoNotApply();
  const test = input.test;
  if (test === "score") return reader.ok ? loadScore(input, base, ctx) : undefined;
  if (test === "kayenta") {
    if (!reader.ok) return undefined;
    return loadKayenta(input, base, {
      report: ctx.report,
      side: (raw, path, which) => loadSide(raw, path, test, "series", which, ctx),
      pass: input.pass ?? JUDGE_DEFAULTS.pass,
      marginal: input.marginal ?? JUDGE_DEFAULTS.marginal,
    });
  }
  return loadSidedJudge(reader, test);
}

/** A judge's input checked against the schema; a score's metric cannot be a score, a canary gate or Kayenta. */
function parseInput(raw: unknown, base: string, ctx: JudgeLoadContext, top: boolean): Input | undefined {
  const at = (field: string) => (field ? `${base}.${field}` : base);
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    ctx.report(base, `a judge is an object like {test: two-proportion, candidate: ..., stable: ...}`);
    return undefined;
  }
  const named = (raw as { test?: unknown }).test;
  if (!top && (named === "score" || named === "canary-gate" || named === "kayenta")) {
    ctx.report(
      at("test"),
      `a score combines statistical and comparative judges; a ${named} cannot be one of its metrics`,
    );
    return undefined;
  }
  const parsed = InputSchema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const message =
        issue.path[0] === "test" ? `test must be one of ${JUDGE_TESTS.join(", ")}` : issueMessage(issue);
      ctx.report(at(joinPath(issue.path)), message);
    }
    return undefined;
  }
  return parsed.data;
}

/**
 * One judge's input as it is read: where it sits, and whether a problem was reported. A problem
 * makes the judge unusable, but reading goes on as far as it can, to report the others too.
 */
class JudgeReader {
  ok = true;

  constructor(
    readonly input: Input,
    private readonly base: string,
    readonly ctx: JudgeLoadContext,
  ) {}

  /** The path of one of the judge's fields (`""`: the judge itself). */
  at(field: string): string {
    return field ? `${this.base}.${field}` : this.base;
  }

  /** Reports a problem at one of the judge's fields. */
  fail(field: string, message: string): void {
    this.ok = false;
    this.ctx.report(this.at(field), message);
  }

  /** Each field the test does not read is a problem, so a misplaced field is not silently ignored. */
  refuseFieldsThatDoNotApply(): void {
    const test = this.input.test;
    for (const key of Object.keys(this.input)) {
      if (key !== "test" && !FIELDS[test].includes(key)) {
        this.fail(key, `${key} does not apply to the ${test} test`);
      }
    }
  }
}

/** The tests that read a candidate and a stable version (one-proportion: a candidate only). */
type SidedTest = Exclude<JudgeTest, "score" | "kayenta">;

/** A judge with its sides read, and the settings the tests share, defaults applied. */
interface Sided {
  reader: JudgeReader;
  input: Input;
  data: JudgeData | undefined;
  candidate: JudgeSide;
  stable: JudgeSide;
  alpha: number;
  direction: JudgeDirection;
  power: number;
  label: string;
  minSamples: number;
  /** 2 when either direction is a regression. */
  sides: 1 | 2;
  /** A sequential test's effect to catch at once, when its minimum sample derives from it. */
  fast: FastEffect | undefined;
  /** The fields the statistical tests' specs begin with, in their order. */
  common: {
    alpha: number;
    direction: JudgeDirection;
    minEffect: number;
    minSamples: number;
    candidate: JudgeSide;
    stable: JudgeSide;
  };
}

/**
 * A judge that reads the versions: its data kind and its sides, then the settings every such test
 * shares, then the spec of its test, each test by its own function.
 */
function loadSidedJudge(reader: JudgeReader, test: SidedTest): JudgeSpec | JudgeCheck | undefined {
  const { input, ctx } = reader;
  const kinds = DATA[test];
  const data = test === "canary-gate" ? undefined : (input.data ?? kinds[0]);
  if (data !== undefined && !kinds.includes(data)) {
    reader.fail("data", `the ${test} test judges ${kinds.join(" or ")}, not ${data}`);
  }
  const candidate = loadSide(input.candidate, reader.at("candidate"), test, data, "candidate", ctx);
  const stable =
    test === "one-proportion" ? {} : loadSide(input.stable, reader.at("stable"), test, data, "stable", ctx);
  if (!candidate || !stable) reader.ok = false;
  if (!reader.ok || !candidate || !stable) return undefined;
  checkSettings(reader, test, data);
  if (!reader.ok) return undefined;
  const s = sidedSettings(reader, test, data, candidate, stable);
  switch (test) {
    case "two-proportion":
      return twoProportion(s);
    case "one-proportion":
      return oneProportion(s);
    case "mann-whitney":
      return mannWhitney(s);
    case "sequential-rate":
      return sequentialRate(s);
    case "sequential-latency":
      return sequentialLatency(s);
    case "comparative":
      return comparative(s);
    case "canary-gate":
      return canaryGate(s);
  }
}

/**
 * The settings that contradict each other: a sequential test's minSamples beside what would
 * derive it, a unit without maxP95Ms, and a p95 guard on a summary, which has no p95.
 */
function checkSettings(reader: JudgeReader, test: SidedTest, data: JudgeData | undefined): void {
  const input = reader.input;
  if ((test === "sequential-rate" || test === "sequential-latency") && input.minSamples !== undefined) {
    const derivers: Array<"fast" | "sigma" | "baseline"> =
      test === "sequential-rate" ? ["fast", "baseline"] : ["fast", "sigma"];
    for (const field of derivers) {
      if (input[field] !== undefined) {
        reader.fail(
          field,
          `${field} derives the minimum sample when minSamples is not given: give minSamples or ${field}, not both`,
        );
      }
    }
  }
  if (input.maxP95Ms === undefined && input.unit !== undefined) {
    reader.fail("unit", "unit is the readings' unit for maxP95Ms: give maxP95Ms too");
  }
  if (input.maxP95Ms !== undefined && data === "summary") {
    reader.fail("maxP95Ms", "a log-latency summary has no p95: read samples or a histogram for maxP95Ms");
  }
}

/**
 * The settings the tests share, defaults applied: the minimum sample is the spec's, or a sequential
 * test's from its fast effect, or the floor of the data kind.
 */
function sidedSettings(
  reader: JudgeReader,
  test: SidedTest,
  data: JudgeData | undefined,
  candidate: JudgeSide,
  stable: JudgeSide,
): Sided {
  const input = reader.input;
  const alpha = input.alpha ?? JUDGE_DEFAULTS.alpha;
  const direction = input.direction ?? JUDGE_DEFAULTS.direction;
  const minEffect = input.minEffect ?? 0;
  const minSamplesDefault =
    data === "counts"
      ? JUDGE_DEFAULTS.minSamplesCounts
      : data === "samples" || data === "histogram" || data === "summary"
        ? JUDGE_DEFAULTS.minSamplesSamples
        : 0;
  const sequentialTest = test === "sequential-rate" || test === "sequential-latency";
  const fast = sequentialTest && input.minSamples === undefined ? fastEffect(test, input) : undefined;
  const minSamples =
    input.minSamples ??
    (fast
      ? fastMinSamples(test as "sequential-rate" | "sequential-latency", fast, input)
      : minSamplesDefault);
  return {
    reader,
    input,
    data,
    candidate,
    stable,
    alpha,
    direction,
    power: input.power ?? JUDGE_DEFAULTS.power,
    label: input.label ?? JUDGE_DEFAULTS.label,
    minSamples,
    sides: direction === "either" ? 2 : 1,
    fast,
    common: { alpha, direction, minEffect, minSamples, candidate, stable },
  };
}

/**
 * A fixed-horizon test's horizon: the spec's `samples`, which may not be below minSamples, or the
 * larger of minSamples and the planned sample size.
 */
function horizon(s: Sided, computed: number | undefined): number | undefined {
  const samples = s.input.samples;
  if (samples !== undefined) {
    if (samples < s.minSamples) {
      s.reader.fail(
        "samples",
        `samples (${samples}) is below minSamples (${s.minSamples}): no decision before both`,
      );
      return undefined;
    }
    return samples;
  }
  return Math.max(1, s.minSamples, computed ?? 0);
}

/** A sequential test's `samples` (where it promotes) cannot be below where it may first decide. */
function samplesAtLeastMin(s: Sided): boolean {
  const samples = s.input.samples;
  if (samples === undefined || samples >= s.minSamples) return true;
  s.reader.fail("samples", `samples (${samples}) is below minSamples (${s.minSamples})`);
  return false;
}

/**
 * Two proportions: the planned sample size is enough to detect the stable rate worsening by
 * `detect` with `power`, when the spec gives the stable rate (`baseline`) and `detect`.
 */
function twoProportion(s: Sided): JudgeSpecOf<"two-proportion"> | undefined {
  const { input, reader, alpha, power, sides, direction } = s;
  if ((input.baseline === undefined) !== (input.detect === undefined)) {
    reader.fail(
      input.baseline === undefined ? "baseline" : "detect",
      "baseline and detect go together: the stable version's rate and the worsening to detect with `power`",
    );
    return undefined;
  }
  let computed: number | undefined;
  if (input.baseline !== undefined && input.detect !== undefined) {
    const worse = direction === "decrease" ? input.baseline - input.detect : input.baseline + input.detect;
    if (!(worse > 0 && worse < 1)) {
      reader.fail("detect", `baseline ${input.baseline} worsened by ${input.detect} leaves the 0–1 range`);
      return undefined;
    }
    computed = samplesPerSide({ baseline: input.baseline, candidate: worse, alpha, power, sides });
  }
  const h = horizon(s, computed);
  if (h === undefined) return undefined;
  return {
    test: "two-proportion",
    ...s.common,
    data: "counts",
    label: s.label,
    horizon: h,
    ...(input.samples !== undefined ? { samplesGiven: true as const } : {}),
    power,
    ...(input.baseline !== undefined ? { baseline: input.baseline, detect: input.detect } : {}),
    ...(input.maxBadRate !== undefined ? { maxBadRate: input.maxBadRate } : {}),
  };
}

/**
 * One proportion: the candidate's rate against a fixed `limit`, whose worsening by `detect`, when
 * given, plans the sample size; the limit is also the default smallest effect.
 */
function oneProportion(s: Sided): JudgeSpecOf<"one-proportion"> | undefined {
  const { input, reader, alpha, power, sides, direction } = s;
  if (input.limit === undefined) {
    reader.fail("limit", "the one-proportion test needs the limit the candidate's rate is tested against");
    return undefined;
  }
  let computed: number | undefined;
  if (input.detect !== undefined) {
    const worse = direction === "decrease" ? input.limit - input.detect : input.limit + input.detect;
    if (!(worse > 0 && worse < 1)) {
      reader.fail("detect", `limit ${input.limit} worsened by ${input.detect} leaves the 0–1 range`);
      return undefined;
    }
    computed = samplesOneProportion({ limit: input.limit, candidate: worse, alpha, power, sides });
  }
  const h = horizon(s, computed);
  if (h === undefined) return undefined;
  return {
    test: "one-proportion",
    alpha,
    direction,
    minEffect: input.minEffect ?? input.limit,
    minSamples: s.minSamples,
    candidate: s.candidate,
    data: "counts",
    label: s.label,
    limit: input.limit,
    method: input.method ?? "normal",
    horizon: h,
    ...(input.samples !== undefined ? { samplesGiven: true as const } : {}),
    power,
    ...(input.detect !== undefined ? { detect: input.detect } : {}),
  };
}

/** Mann-Whitney on samples or a histogram, its horizon the minimum sample, with its optional p95 guard. */
function mannWhitney(s: Sided): JudgeSpecOf<"mann-whitney"> | undefined {
  const h = horizon(s, undefined);
  if (h === undefined) return undefined;
  const data = s.data as "samples" | "histogram";
  return { test: "mann-whitney", ...s.common, data, horizon: h, ...guard(s.input, s.data) };
}

/** The sequential test on counts, which tests bad events that increase. */
function sequentialRate(s: Sided): JudgeSpecOf<"sequential-rate"> | undefined {
  const { input, fast } = s;
  if (s.direction !== "increase") {
    s.reader.fail(
      "direction",
      "sequential-rate tests bad events that increase: count the events that are bad (errors, declines) and keep direction increase",
    );
    return undefined;
  }
  if (!samplesAtLeastMin(s)) return undefined;
  return {
    test: "sequential-rate",
    ...s.common,
    data: "counts",
    label: s.label,
    ...(input.allocation !== undefined ? { allocation: input.allocation } : {}),
    concentration: input.concentration ?? JUDGE_DEFAULTS.concentration,
    ...(input.samples !== undefined ? { maxSamples: input.samples } : {}),
    ...(fast ? { fast } : {}),
    ...(input.maxBadRate !== undefined ? { maxBadRate: input.maxBadRate } : {}),
  };
}

/** The sequential test on latencies, with its optional p95 guard. */
function sequentialLatency(s: Sided): JudgeSpecOf<"sequential-latency"> | undefined {
  const { input, fast, data } = s;
  if (!samplesAtLeastMin(s)) return undefined;
  return {
    test: "sequential-latency",
    ...s.common,
    data: data as "samples" | "histogram" | "summary",
    g: input.g ?? JUDGE_DEFAULTS.g,
    ...(input.samples !== undefined ? { maxSamples: input.samples } : {}),
    ...(fast ? { fast } : {}),
    ...guard(input, data),
  };
}

/**
 * The comparative judge: a minimum sample needs the candidate's request count, and nanStrategy
 * applies to series only.
 */
function comparative(s: Sided): JudgeSpecOf<"comparative"> | undefined {
  const { input, reader, data, candidate, minSamples } = s;
  if (minSamples > 0 && data === "value" && !candidate.n) {
    reader.fail("minSamples", "minSamples needs the candidate's `n` reading (how many requests it served)");
    return undefined;
  }
  if (input.nanStrategy !== undefined && data !== "series") {
    reader.fail("nanStrategy", "nanStrategy applies to data: series (the points of a series without value)");
    return undefined;
  }
  return {
    test: "comparative",
    alpha: s.alpha,
    direction: s.direction,
    minSamples,
    candidate,
    stable: s.stable,
    data: data as "value" | "series",
    ...(input.maxRatio !== undefined ? { maxRatio: input.maxRatio } : {}),
    ...(input.minRatio !== undefined ? { minRatio: input.minRatio } : {}),
    ...(input.maxDelta !== undefined ? { maxDelta: input.maxDelta } : {}),
    minPoints: input.minPoints ?? JUDGE_DEFAULTS.minPoints,
    ...(input.nanStrategy !== undefined ? { nanStrategy: input.nanStrategy } : {}),
  };
}

/** The canary gate's thresholds, its policy's defaults where the spec gives none. */
function canaryGate(s: Sided): JudgeSpecOf<"canary-gate"> | undefined {
  const input = s.input;
  let cooldown: number = CANARY_GATE_DEFAULTS.rollbackCooldownSeconds;
  if (input.rollbackCooldown !== undefined) {
    const d = parseDuration(input.rollbackCooldown);
    if ("error" in d) {
      s.reader.fail("rollbackCooldown", d.error);
      return undefined;
    }
    cooldown = Math.round(d.seconds);
  }
  return {
    test: "canary-gate",
    candidate: s.candidate,
    stable: s.stable,
    p95BudgetRatio: input.p95BudgetRatio ?? CANARY_GATE_DEFAULTS.p95BudgetRatio,
    errorRateCeiling: input.errorRateCeiling ?? CANARY_GATE_DEFAULTS.errorRateCeiling,
    minSampleCount: input.minSampleCount ?? CANARY_GATE_DEFAULTS.minSampleCount,
    fullRolloutDwell: input.fullRolloutDwell ?? CANARY_GATE_DEFAULTS.fullRolloutDwell,
    rollbackCooldownSeconds: cooldown,
    maxRollbacksPerHour: input.maxRollbacksPerHour ?? CANARY_GATE_DEFAULTS.maxRollbacksPerHour,
    fingerprint: "{{rollout.digest}}",
  };
}

/** The fast effect of a sequential test that gave no minSamples: the spec's, or the defaults. */
function fastEffect(test: JudgeTest, input: Input): FastEffect {
  if (test === "sequential-rate") {
    return {
      ratio: input.fast ?? JUDGE_DEFAULTS.fastRate.ratio,
      baseline: input.baseline ?? JUDGE_DEFAULTS.fastRate.baseline,
    };
  }
  return {
    ratio: input.fast ?? JUDGE_DEFAULTS.fastLatency.ratio,
    sigma: input.sigma ?? JUDGE_DEFAULTS.fastLatency.sigma,
  };
}

/**
 * A sequential test's minimum sample from its fast effect at its alpha (`functions/judges/fast.ts`);
 * the error budget derives it again from the gate's share.
 */
export function fastMinSamples(
  test: "sequential-rate" | "sequential-latency",
  fast: FastEffect,
  spec: { alpha?: number; concentration?: number; g?: number },
): number {
  const alpha = spec.alpha ?? JUDGE_DEFAULTS.alpha;
  if (test === "sequential-rate") {
    const baseline = fast.baseline ?? JUDGE_DEFAULTS.fastRate.baseline;
    // A ratio that leaves the 0–1 range is capped just below 1: "every request fails".
    const ratio = Math.min(fast.ratio, (1 - 1e-9) / baseline);
    return fastRateSamples({
      baseline,
      ratio,
      alpha,
      concentration: spec.concentration ?? JUDGE_DEFAULTS.concentration,
    });
  }
  return fastLatencySamples({
    ratio: fast.ratio,
    sigma: fast.sigma ?? JUDGE_DEFAULTS.fastLatency.sigma,
    alpha,
    g: spec.g ?? JUDGE_DEFAULTS.g,
  });
}

/** A latency test's p95 guard with its unit: seconds for a Prometheus histogram, milliseconds otherwise. */
function guard(input: Input, data: JudgeData | undefined): { maxP95Ms?: number; unit?: "ms" | "s" } {
  if (input.maxP95Ms === undefined) return {};
  return { maxP95Ms: input.maxP95Ms, unit: input.unit ?? (data === "histogram" ? "s" : "ms") };
}

function loadScore(input: Input, base: string, ctx: JudgeLoadContext): JudgeSpec | undefined {
  const pass = input.pass ?? JUDGE_DEFAULTS.pass;
  const marginal = input.marginal ?? JUDGE_DEFAULTS.marginal;
  let ok = true;
  if (marginal > pass) {
    ctx.report(`${base}.marginal`, `marginal (${marginal}) must not exceed pass (${pass})`);
    ok = false;
  }
  if (!input.metrics) {
    ctx.report(`${base}.metrics`, "a score needs its metrics");
    return undefined;
  }
  const metrics: ScoredCheck[] = [];
  const names = new Set<string>();
  input.metrics.forEach((raw, i) => {
    const path = `${base}.metrics[${i}]`;
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
      ctx.report(path, "a score metric is an object with a name and a judge's fields");
      ok = false;
      return;
    }
    const { name, weight, critical, ...rest } = raw as Record<string, unknown>;
    if (typeof name !== "string" || name === "") {
      ctx.report(`${path}.name`, "a score metric needs a name");
      ok = false;
    } else if (names.has(name)) {
      ctx.report(`${path}.name`, `metric "${name}" appears twice in the score`);
      ok = false;
    } else names.add(name);
    if (weight !== undefined && !(typeof weight === "number" && weight >= 0 && Number.isFinite(weight))) {
      ctx.report(`${path}.weight`, `weight must be a number >= 0, got ${JSON.stringify(weight)}`);
      ok = false;
    }
    if (critical !== undefined && typeof critical !== "boolean") {
      ctx.report(`${path}.critical`, "critical must be true or false");
      ok = false;
    }
    const check = loadAny(rest, path, ctx, false) as JudgeCheck | undefined;
    if (!check || typeof name !== "string") {
      ok = false;
      return;
    }
    metrics.push({
      name,
      weight: typeof weight === "number" ? weight : 1,
      critical: critical === true,
      check,
    });
  });
  return ok ? { test: "score", metrics, pass, marginal } : undefined;
}

/** Reads how a judge reads one version; see {@link JudgeSide}. */
function loadSide(
  raw: unknown,
  path: string,
  test: JudgeTest,
  data: JudgeData | undefined,
  which: "candidate" | "stable",
  ctx: JudgeLoadContext,
): JudgeSide | undefined {
  const { required, optional } = readingNames(test, data, which);
  const allowed = [...required, ...optional];
  if (raw === undefined) {
    ctx.report(path, `the judge needs to read the ${which} version: give a provider and what to read`);
    return undefined;
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    ctx.report(
      path,
      `${which} is an object: a provider ({prometheus: {...}}) or named readings (${allowed.join(", ")})`,
    );
    return undefined;
  }
  const entries = Object.entries(raw as Record<string, unknown>);
  const providerKeys = entries.map(([k]) => k).filter((k) => isProviderKey(k));
  const side: JudgeSide = {};
  let ok = true;
  const fail = (field: string, message: string) => {
    ok = false;
    ctx.report(field ? `${path}.${field}` : path, message);
  };
  const known = (key: string): boolean => {
    if (allowed.includes(key)) return true;
    fail(key, `unknown reading "${key}": the ${which} side of ${test} reads ${allowed.join(", ")}`);
    return false;
  };
  if (providerKeys.length > 0) {
    // One provider call; the other keys are expressions that read values out of its result.
    const provider = loadProvider(Object.fromEntries(entries.filter(([k]) => isProviderKey(k))), path, ctx);
    let sinceStart = false;
    const expressions: Record<string, string> = {};
    for (const [key, value] of entries) {
      if (isProviderKey(key)) continue;
      if (key === "sinceStart") {
        if (typeof value !== "boolean") fail(key, "sinceStart must be true or false");
        else sinceStart = value;
        continue;
      }
      if (!known(key)) continue;
      if (typeof value !== "string" || value.trim() === "") {
        fail(key, `an expression over the provider's result, like "result.${key}"`);
        continue;
      }
      expressions[key] = value;
    }
    if (!provider) return undefined;
    const names =
      Object.keys(expressions).length > 0
        ? Object.keys(expressions)
        : data === "counts"
          ? ["bad", "n"]
          : ["value"];
    for (const name of names) {
      const expression = expressions[name] ?? (data === "counts" ? `result.${name}` : undefined);
      const reading = makeReading(provider, expression, sinceStart, `${path}.${name}`, ctx);
      if (reading) side[name] = reading;
      else ok = false;
    }
  } else {
    for (const [key, value] of entries) {
      if (!known(key)) continue;
      if (value === null || typeof value !== "object" || Array.isArray(value)) {
        fail(key, "a reading is a provider ({prometheus: {query: ...}}) with an optional value expression");
        continue;
      }
      const { value: expression, sinceStart, ...providerPart } = value as Record<string, unknown>;
      if (expression !== undefined && (typeof expression !== "string" || expression.trim() === "")) {
        fail(`${key}.value`, 'value is an expression over the provider\'s result, like "result[0]"');
        continue;
      }
      if (sinceStart !== undefined && typeof sinceStart !== "boolean") {
        fail(`${key}.sinceStart`, "sinceStart must be true or false");
        continue;
      }
      const provider = loadProvider(providerPart, `${path}.${key}`, ctx);
      if (!provider) {
        ok = false;
        continue;
      }
      const reading = makeReading(
        provider,
        expression as string | undefined,
        sinceStart === true,
        `${path}.${key}.value`,
        ctx,
      );
      if (reading) side[key] = reading;
      else ok = false;
    }
  }
  for (const name of required) {
    if (ok && !side[name]) fail("", `the ${which} side of ${test} needs the reading "${name}"`);
  }
  return ok ? side : undefined;
}

function isProviderKey(key: string): boolean {
  return (READING_PROVIDERS as readonly string[]).includes(key) || OTHER_PROVIDERS.includes(key);
}

function loadProvider(
  raw: Record<string, unknown>,
  path: string,
  ctx: JudgeLoadContext,
): Provider | undefined {
  const keys = Object.keys(raw).filter((k) => isProviderKey(k));
  const extra = Object.keys(raw).filter((k) => !isProviderKey(k));
  if (extra.length > 0) {
    ctx.report(`${path}.${extra[0]}`, `unknown field "${extra[0]}" beside the provider`);
    return undefined;
  }
  if (keys.length !== 1) {
    ctx.report(path, keys.length === 0 ? "no provider specified" : "multiple providers specified");
    return undefined;
  }
  const key = keys[0] as string;
  if (OTHER_PROVIDERS.includes(key)) {
    ctx.report(`${path}.${key}`, `a judge reads through prometheus, web, cloudWatch or samples, not ${key}`);
    return undefined;
  }
  const provider = ctx.provider({ [key]: raw[key] }, path);
  if (!provider) return undefined;
  for (const match of JSON.stringify(provider).matchAll(PLACEHOLDER)) {
    if (!(match[1] && Object.hasOwn(JUDGE_PLACEHOLDERS, match[1]))) {
      ctx.report(
        `${path}.${key}`,
        `unknown placeholder {{judge.${match[1]}}}: use ${Object.values(JUDGE_PLACEHOLDERS).join(", ")}`,
      );
      return undefined;
    }
  }
  return provider;
}

function makeReading(
  provider: Provider,
  expression: string | undefined,
  sinceStart: boolean,
  path: string,
  ctx: JudgeLoadContext,
): Reading | undefined {
  if (expression !== undefined) {
    try {
      compileExpression(expression);
    } catch (error) {
      ctx.report(path, (error as Error).message);
      return undefined;
    }
  }
  return { provider, ...(expression !== undefined ? { expression } : {}), sinceStart };
}
