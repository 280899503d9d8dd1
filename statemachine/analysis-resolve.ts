import type { z } from "zod";
import {
  ArgoAnalysisTemplateSpecSchema,
  type ArgoArgument,
  type ArgoMetric,
  ArgoMetricSchema,
  ArgoReadingProviderSchema,
  UNSUPPORTED_PROVIDERS,
} from "./argo-schema.ts";
import { datadogOf, graphiteOf, influxdbOf, kayentaOf, newRelicOf, wavefrontOf } from "./argo-vendors.ts";
import { metricUpperBoundSeconds } from "./compile.ts";
import { checkTimeExpression, compileCondition, goDuration } from "./conditions.ts";
import { ARGO_DEFAULTS } from "./defaults.ts";
import { formatDuration, parseDuration } from "./duration.ts";
import { JUDGE_PLUGIN, loadJudge } from "./judge-load.ts";
import { MAX_CLOUDWATCH_WINDOW_SECONDS, MAX_WAIT_SECONDS } from "./limits.ts";
import { issueMessage, joinPath, type Problem } from "./problems.ts";
import { LAMBDA_PLUGIN, LambdaProviderSchema } from "./providers.ts";
import { re2Search } from "./re2.ts";
import {
  type AnalysisSpec,
  type Metric,
  type MetricProviderSchema,
  MetricSchema,
  type Provider,
  ProviderSchema,
} from "./spec.ts";

type ProviderInput = z.input<typeof MetricProviderSchema>;

/** Where a document came from, so problems inside it can name the place. */
export interface Origin {
  file: string;
  document?: number;
  object?: string;
}

/** An analysis template as loaded, before arguments: raw metrics stay raw until substitution. */
export interface LoadedTemplate {
  name: string;
  kind: "AnalysisTemplate" | "ClusterAnalysisTemplate" | "inline";
  origin: Origin;
  /** Field path of the template's spec inside its document (`spec` for Argo objects). */
  basePath: string;
  args: ArgoArgument[];
  metrics: unknown[];
  dryRun: Array<{ metricName: string }>;
  measurementRetention: Array<{ metricName: string; limit: number }>;
}

/** What a step (or background analysis) asks for: template names, args, dry-run and retention. */
export interface AnalysisRef {
  templates: Array<{ templateName: string; clusterScope?: boolean }>;
  args: ArgoArgument[];
  dryRun: Array<{ metricName: string }>;
  measurementRetention: Array<{ metricName: string; limit: number }>;
}

/**
 * Values known only when an analysis starts: the candidate's and the stable version's labels (the
 * pushed image tag, or its digest). Argo's `valueFrom.podTemplateHashValue: Latest | Stable`
 * resolve to these, which is what an AWS metric selects a version by; specs may also write them.
 */
export const RUNTIME_PLACEHOLDERS = {
  latest: "{{rollout.latest}}",
  stable: "{{rollout.stable}}",
  /** The candidate's image digest (`sha256:...`): the canary gate's fingerprint. */
  digest: "{{rollout.digest}}",
} as const;

/** Values an argument's `valueFrom` can take at parse time. */
export interface ArgContext {
  /** The spec's revision (a hash of the pod template). */
  revision?: string;
  /** The Rollout object, for `fieldRef` (`metadata.name`, `metadata.labels['app']`). */
  object?: unknown;
}

/** Reads an AnalysisTemplate spec; problems name the template's document. */
export function loadTemplate(
  name: string,
  kind: LoadedTemplate["kind"],
  spec: unknown,
  origin: Origin,
  basePath: string,
  problems: Problem[],
): LoadedTemplate | undefined {
  const parsed = ArgoAnalysisTemplateSpecSchema.safeParse(spec);
  if (!parsed.success) {
    problems.push(...zodProblems(parsed.error, origin, basePath));
    return undefined;
  }
  return {
    name,
    kind,
    origin,
    basePath,
    args: parsed.data.args ?? [],
    metrics: parsed.data.metrics,
    dryRun: parsed.data.dryRun ?? [],
    measurementRetention: parsed.data.measurementRetention ?? [],
  };
}

/** Turns zod issues into problems at a base path of a document. */
export function zodProblems(error: z.ZodError, origin: Origin, basePath: string, step?: number): Problem[] {
  return error.issues.map((issue) => {
    const path = joinPath([...(basePath ? [basePath] : []), ...issue.path]);
    return { ...origin, path, ...(step !== undefined ? { step } : {}), message: issueMessage(issue) };
  });
}

/**
 * Resolves an analysis reference against loaded templates: merges arguments as Argo does
 * (declared template args, overridden by the reference's values), substitutes `{{args.NAME}}`,
 * validates each metric by Argo's rules and compiles its conditions, so every mistake is found
 * when the spec is loaded rather than at the first measurement.
 */
export function resolveAnalysis(
  ref: AnalysisRef,
  templates: ReadonlyMap<string, LoadedTemplate>,
  where: Origin & { path: string; step?: number },
  context: ArgContext,
  problems: Problem[],
): AnalysisSpec | undefined {
  const before = problems.length;
  const out: AnalysisSpec = { templates: [], args: {} };
  const seenMetrics = new Map<string, string>();
  const used: LoadedTemplate[] = [];
  const repeats = repeatedTemplates(ref, where, problems);
  for (const [i, templateRef] of ref.templates.entries()) {
    if (repeats.has(i)) continue;
    const kind = templateRef.clusterScope ? "ClusterAnalysisTemplate" : "AnalysisTemplate";
    const template =
      templates.get(`${kind}/${templateRef.templateName}`) ??
      templates.get(`inline/${templateRef.templateName}`);
    if (!template) {
      problems.push({
        ...where,
        path: `${where.path}.templates[${i}].templateName`,
        message: `${kind} "${templateRef.templateName}" not found in the files given`,
      });
      continue;
    }
    const args = mergeArgs(template, ref.args, where, context, problems);
    if (!args) continue;
    Object.assign(out.args, args);
    const metrics: Metric[] = [];
    for (const [m, raw] of template.metrics.entries()) {
      const metric = resolveMetric(template, m, raw, args, problems);
      if (!metric) continue;
      const other = seenMetrics.get(metric.name);
      if (other !== undefined) {
        problems.push({
          ...template.origin,
          path: `${template.basePath}.metrics[${m}].name`,
          message: `metric "${metric.name}" is also defined in template "${other}": metric names must be unique in one analysis`,
        });
        continue;
      }
      seenMetrics.set(metric.name, template.name);
      metrics.push(metric);
    }
    if (metrics.length > 0) out.templates.push({ name: template.name, kind: template.kind, metrics });
    used.push(template);
  }
  if (problems.length === before) {
    applyRules(
      out.templates.flatMap((t) => t.metrics),
      ref,
      used,
      where,
      problems,
    );
  }
  return problems.length === before ? out : undefined;
}

/**
 * The indexes of the references that name a template named before them in the same analysis,
 * with one problem per template so named: Argo refuses the analysis (its metrics would have the
 * same names), and each copy would otherwise be resolved and reported again (a template named
 * 16,000 times was 16,000 resolutions and 15,999 problems).
 */
function repeatedTemplates(
  ref: AnalysisRef,
  where: Origin & { path: string; step?: number },
  problems: Problem[],
): Set<number> {
  const first = new Map<string, { index: number; times: number }>();
  const repeats = new Set<number>();
  for (const [i, t] of ref.templates.entries()) {
    const key = `${t.clusterScope ? "ClusterAnalysisTemplate" : "AnalysisTemplate"} "${t.templateName}"`;
    const seen = first.get(key);
    if (seen) {
      seen.times++;
      repeats.add(i);
    } else first.set(key, { index: i, times: 1 });
  }
  for (const [key, { index, times }] of first) {
    if (times < 2) continue;
    problems.push({
      ...where,
      path: `${where.path}.templates[${index}].templateName`,
      message: `${key} is named ${times.toLocaleString("en-US")} times in this analysis: name each template once (metric names must be unique in one analysis)`,
    });
  }
  return repeats;
}

function mergeArgs(
  template: LoadedTemplate,
  incoming: ArgoArgument[],
  where: Origin & { path: string; step?: number },
  context: ArgContext,
  problems: Problem[],
): Record<string, string> | undefined {
  const merged = new Map<string, ArgoArgument>(template.args.map((a) => [a.name, { ...a }]));
  // Where each argument's valueFrom is written: the template's declaration or the step's args.
  const written = new Map<string, Origin & { path: string; step?: number }>(
    template.args.map((a, i) => [a.name, { ...template.origin, path: `${template.basePath}.args[${i}]` }]),
  );
  for (const [i, arg] of incoming.entries()) {
    const declared = merged.get(arg.name);
    if (!declared) continue; // Argo ignores arguments a template does not declare.
    if (arg.value !== undefined) merged.set(arg.name, { name: arg.name, value: arg.value });
    else if (arg.valueFrom) {
      merged.set(arg.name, { name: arg.name, valueFrom: arg.valueFrom });
      written.set(arg.name, { ...where, path: `${where.path}.args[${i}]` });
    }
  }
  const values: Record<string, string> = {};
  let ok = true;
  for (const arg of merged.values()) {
    const value = resolveArgValue(arg, context);
    if ("error" in value) {
      ok = false;
      // A Secret is refused where it is named; a missing value is given in the step's args.
      const at = arg.valueFrom?.secretKeyRef ? written.get(arg.name) : undefined;
      problems.push(
        at
          ? {
              ...at,
              path: `${at.path}.valueFrom.secretKeyRef`,
              message: `template "${template.name}": ${value.error}`,
            }
          : { ...where, path: `${where.path}.args`, message: `template "${template.name}": ${value.error}` },
      );
      continue;
    }
    values[arg.name] = value.value;
  }
  return ok ? values : undefined;
}

function resolveArgValue(arg: ArgoArgument, context: ArgContext): { value: string } | { error: string } {
  if (arg.value !== undefined) return { value: arg.value };
  const from = arg.valueFrom;
  if (!from) return { error: `args.${arg.name} was not resolved: give it a value in the step's args` };
  if (from.podTemplateHashValue === "Latest") return { value: RUNTIME_PLACEHOLDERS.latest };
  if (from.podTemplateHashValue === "Stable") return { value: RUNTIME_PLACEHOLDERS.stable };
  if (from.fieldRef) {
    const value = fieldRef(context.object, from.fieldRef.fieldPath);
    return value === undefined
      ? { error: `args.${arg.name}: fieldRef "${from.fieldRef.fieldPath}" has no value in the Rollout` }
      : { value };
  }
  return {
    error: `args.${arg.name}: secretKeyRef is not supported; keep secrets in AWS Secrets Manager and give the provider a role`,
  };
}

/** `metadata.name`, `metadata.labels['app']`, `spec.replicas` on the Rollout object. */
function fieldRef(object: unknown, path: string): string | undefined {
  const segments = path.match(/[^.[\]'"]+/g) ?? [];
  let node: unknown = object;
  for (const s of segments) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[s];
  }
  return node === undefined || node === null || typeof node === "object" ? undefined : String(node);
}

function substitute(raw: unknown, args: Record<string, string>): { value: unknown; missing: string[] } {
  const missing: string[] = [];
  const text = JSON.stringify(raw).replace(
    /\{\{\s*args\.([A-Za-z0-9_.-]+)\s*\}\}/g,
    (whole, name: string) => {
      const value = Object.hasOwn(args, name) ? args[name] : undefined;
      if (value === undefined) {
        missing.push(name);
        return whole;
      }
      return JSON.stringify(value).slice(1, -1);
    },
  );
  return { value: JSON.parse(text), missing };
}

function resolveMetric(
  template: LoadedTemplate,
  index: number,
  raw: unknown,
  args: Record<string, string>,
  problems: Problem[],
): Metric | undefined {
  const base = `${template.basePath}.metrics[${index}]`;
  const at = (field: string): Problem => ({
    ...template.origin,
    path: field ? `${base}.${field}` : base,
    message: "",
  });
  const { value, missing } = substitute(raw, args);
  for (const name of new Set(missing)) {
    problems.push({
      ...at(""),
      message: `{{args.${name}}} is used but template "${template.name}" declares no arg "${name}"`,
    });
  }
  if (missing.length > 0) return undefined;
  const provider = (value as { provider?: Record<string, unknown> } | null)?.provider;
  if (provider && typeof provider === "object") {
    for (const name of UNSUPPORTED_PROVIDERS) {
      if (Object.hasOwn(provider, name)) {
        problems.push({
          ...at(`provider.${name}`),
          message: unsupportedProviderMessage(name),
        });
        return undefined;
      }
    }
  }
  const parsed = ArgoMetricSchema.safeParse(value);
  if (!parsed.success) {
    problems.push(...zodProblems(parsed.error, template.origin, base));
    return undefined;
  }
  const before = problems.length;
  const metric = normalizeMetric(parsed.data, template, (field, message) =>
    problems.push({ ...at(field), message }),
  );
  if (!metric || problems.length !== before) return undefined;
  return metric;
}

/** Why an Argo provider this controller does not run is refused, and what to use instead. */
const UNSUPPORTED_REASONS: Record<string, string> = {
  skywalking: "no adapter runs SkyWalking GraphQL queries yet: expose the result through the web provider",
};

function unsupportedProviderMessage(name: string): string {
  const use = `use prometheus, web, cloudWatch, samples, datadog, newRelic, graphite, influxdb, wavefront, kayenta, job, the ${LAMBDA_PLUGIN} plugin or the ${JUDGE_PLUGIN} plugin`;
  return `the ${name} provider is not supported: ${UNSUPPORTED_REASONS[name] ?? use}`;
}

const intOf = (v: number | string | undefined): number | undefined | "bad" => {
  if (v === undefined) return undefined;
  const n = typeof v === "number" ? v : /^-?\d+$/.test(v.trim()) ? Number(v) : Number.NaN;
  // Past 2^53 a number is no longer exact: 99999999999999999999 is not a count anyone means.
  return Number.isSafeInteger(n) ? n : "bad";
};

/** Reports a metric's problem at one of its fields (`""` for the metric itself). */
type Report = (field: string, message: string) => void;

/** A metric's durations in seconds and its count and limits, Argo's defaults filled in. */
interface MetricLimits {
  interval: number | undefined;
  initialDelay: number;
  count: number | undefined;
  failureLimit: number;
  inconclusiveLimit: number;
  consecutiveErrorLimit: number;
  consecutiveSuccessLimit: number;
}

/**
 * An Argo metric as the workflow runs it: its limits read and checked as Argo checks them, its
 * conditions compiled, its provider normalized, and its longest run within what an execution can
 * wait. Undefined when the metric cannot run; every reason is reported.
 */
function normalizeMetric(m: ArgoMetric, template: LoadedTemplate, report: Report): Metric | undefined {
  // A judge's promote decision is a Successful measurement that ends the metric: a streak of one,
  // so reaching `count` while it only held is Inconclusive (a person decides), never Successful.
  const judged = m.provider.plugin !== undefined && Object.hasOwn(m.provider.plugin, JUDGE_PLUGIN);
  const limits = metricLimits(m, judged, report);
  if (judged) checkJudgeLimits(m, limits, report);
  validateMetric(m, limits, report);
  checkConditions(m, template, report);
  checkRangeQuery(m, template, report);
  const provider = normalizeProvider(m.provider, report);
  if (!provider) return undefined;
  const { interval, count } = limits;
  const candidate = {
    name: m.name,
    ...(interval !== undefined ? { interval } : {}),
    initialDelay: limits.initialDelay,
    ...(count !== undefined ? { count } : {}),
    failureLimit: limits.failureLimit,
    inconclusiveLimit: limits.inconclusiveLimit,
    consecutiveErrorLimit: limits.consecutiveErrorLimit,
    consecutiveSuccessLimit: limits.consecutiveSuccessLimit,
    ...(m.successCondition !== undefined ? { successCondition: m.successCondition } : {}),
    ...(m.failureCondition !== undefined ? { failureCondition: m.failureCondition } : {}),
    provider,
  };
  const parsed = MetricSchema.safeParse(candidate);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) report(joinPath(issue.path), issueMessage(issue));
    return undefined;
  }
  // The workflow's analysis step waits at most this long (its TimeoutSeconds derives from it).
  const bound = metricUpperBoundSeconds(parsed.data);
  if (bound !== undefined && bound > MAX_WAIT_SECONDS) {
    report(
      "",
      `metric "${m.name}" may run for up to ${formatDuration(bound)} (initialDelay, count × interval, and 10 s per allowed consecutive error of each measurement), longer than ${formatDuration(MAX_WAIT_SECONDS)}: a rollout's Step Functions execution lasts at most a year; lower count or interval`,
    );
    return undefined;
  }
  return parsed.data;
}

/** A duration field in seconds; one that does not parse is reported, and counts as absent. */
function secondsField(field: string, v: string | number | undefined, report: Report): number | undefined {
  if (v === undefined) return undefined;
  const d = parseDuration(v);
  if ("error" in d) {
    report(field, d.error);
    return undefined;
  }
  return d.seconds;
}

/** A count field as a whole number; one that is not is reported, and counts as absent. */
function intField(field: string, v: number | string | undefined, report: Report): number | undefined {
  const n = intOf(v);
  if (n === "bad") {
    report(
      field,
      `must be a whole number (at most ${Number.MAX_SAFE_INTEGER}), got ${typeof v === "number" ? v : JSON.stringify(v)}`,
    );
    return undefined;
  }
  return n;
}

/**
 * The metric's timing and limits, read in the order of its fields; a judge's streak of successes
 * defaults to one, its promote decision.
 */
function metricLimits(m: ArgoMetric, judged: boolean, report: Report): MetricLimits {
  const interval = secondsField("interval", m.interval, report);
  const initialDelay =
    secondsField("initialDelay", m.initialDelay, report) ?? ARGO_DEFAULTS.metric.initialDelaySeconds;
  const count = intField("count", m.count, report);
  const failureLimit = intField("failureLimit", m.failureLimit, report) ?? ARGO_DEFAULTS.metric.failureLimit;
  const inconclusiveLimit =
    intField("inconclusiveLimit", m.inconclusiveLimit, report) ?? ARGO_DEFAULTS.metric.inconclusiveLimit;
  const consecutiveErrorLimit =
    intField("consecutiveErrorLimit", m.consecutiveErrorLimit, report) ??
    ARGO_DEFAULTS.metric.consecutiveErrorLimit;
  const consecutiveSuccessLimit =
    intField("consecutiveSuccessLimit", m.consecutiveSuccessLimit, report) ??
    (judged ? 1 : ARGO_DEFAULTS.metric.consecutiveSuccessLimit);
  return {
    interval,
    initialDelay,
    count,
    failureLimit,
    inconclusiveLimit,
    consecutiveErrorLimit,
    consecutiveSuccessLimit,
  };
}

/** A judge's own rules: it must be able to end on a promote and to fail, and it decides by itself. */
function checkJudgeLimits(m: ArgoMetric, limits: MetricLimits, report: Report): void {
  if (limits.consecutiveSuccessLimit === 0) {
    report(
      "consecutiveSuccessLimit",
      "a judge ends on a promote decision: consecutiveSuccessLimit must be >= 1 (with 0 a judge that only held would end Successful)",
    );
  }
  if (limits.failureLimit < 0) {
    report(
      "failureLimit",
      "a judge that can never fail cannot roll back: use dryRun to watch one without acting",
    );
  }
  for (const field of ["successCondition", "failureCondition"] as const) {
    if (m[field] !== undefined) report(field, `a judge decides by itself: remove ${field}`);
  }
}

/** Argo's ValidateMetric, with its messages. */
function validateMetric(m: ArgoMetric, limits: MetricLimits, report: Report): void {
  const { count, failureLimit, inconclusiveLimit, consecutiveErrorLimit, consecutiveSuccessLimit } = limits;
  if (consecutiveSuccessLimit < 0) report("consecutiveSuccessLimit", "consecutiveSuccessLimit must be >= 0");
  if (failureLimit < -1) report("failureLimit", "failureLimit must be >= 0, or -1 to be disabled");
  if (consecutiveSuccessLimit === 0 && failureLimit === -1) {
    report("failureLimit", "failureLimit and consecutiveSuccessLimit cannot both be disabled");
  }
  if (inconclusiveLimit < 0) report("inconclusiveLimit", "inconclusiveLimit must be >= 0");
  if (consecutiveErrorLimit < 0) report("consecutiveErrorLimit", "consecutiveErrorLimit must be >= 0");
  const c = count ?? 0;
  if (c > 0) {
    if (failureLimit >= 0 && c < failureLimit + consecutiveSuccessLimit) {
      report(
        "count",
        `count (${c}) must be >= failureLimit + consecutiveSuccessLimit (${failureLimit} + ${consecutiveSuccessLimit}) if both >= 0`,
      );
    } else if (failureLimit < 0 && c < consecutiveSuccessLimit) {
      report("count", "count must be >= consecutiveSuccessLimit");
    }
    if (c < inconclusiveLimit) report("count", "count must be >= inconclusiveLimit");
  }
  // An interval given but unreadable is already a problem of its own.
  if (c > 1 && m.interval === undefined) report("interval", "interval must be specified when count > 1");
  if (count !== undefined && count < 0) report("count", "count must be >= 0");
}

/** The success and failure conditions must compile as expressions, as Argo compiles them. */
function checkConditions(m: ArgoMetric, template: LoadedTemplate, report: Report): void {
  for (const field of ["successCondition", "failureCondition"] as const) {
    const text = m[field];
    if (text === undefined) continue;
    try {
      compileCondition(text);
    } catch (error) {
      report(field, `template "${template.name}", metric "${m.name}": ${(error as Error).message}`);
    }
  }
}

/**
 * A Prometheus `rangeQuery` that no measurement could read: `start` and `end` that do not compile
 * as expressions, a `step` that is not a Go duration (or not positive: Prometheus refuses a zero
 * or negative step). Argo only finds out when it measures; a field with an `{{args.…}}`
 * placeholder is still only read then.
 */
function checkRangeQuery(m: ArgoMetric, template: LoadedTemplate, report: Report): void {
  const range = m.provider.prometheus?.rangeQuery;
  if (!range) return;
  const at = "provider.prometheus.rangeQuery";
  const where = `template "${template.name}", metric "${m.name}"`;
  for (const field of ["start", "end"] as const) {
    const text = range[field];
    if (text.includes("{{")) continue;
    try {
      checkTimeExpression(text);
    } catch (error) {
      report(`${at}.${field}`, `${where}: ${(error as Error).message}`);
    }
  }
  if (range.step.includes("{{")) return;
  try {
    if (goDuration(range.step) <= 0n) {
      report(`${at}.step`, `${where}: step must be a positive duration (e.g. 30s, 1m), got "${range.step}"`);
    }
  } catch (error) {
    report(`${at}.step`, `${where}: ${(error as Error).message}`);
  }
}

/**
 * Argo's dry-run and measurement-retention rules over a run's metrics (`utils/analysis/helpers.go`):
 * the step's rules then every template's, each a regular expression matched anywhere in a metric's
 * name (Go's `regexp.MatchString`, here RE2 as there); two rules with one name, or a rule that
 * matches no metric (an invalid pattern matches nothing), are Argo's "Analysis spec invalid"
 * errors, reported here when the spec is loaded. A metric's retention is its last matching rule's.
 */
function applyRules(
  metrics: Metric[],
  ref: AnalysisRef,
  templates: readonly LoadedTemplate[],
  where: Origin & { path: string; step?: number },
  problems: Problem[],
): void {
  const names = metrics.map((m) => m.name);
  const matching = (pattern: string) => {
    try {
      return names.filter((name) => re2Search(pattern, name));
    } catch {
      return [];
    }
  };
  const check = <T extends { metricName: string }>(
    rules: T[],
    field: string,
    what: string,
  ): Array<[T, string[]]> => {
    const seen = new Set<string>();
    return rules.map((rule, i) => {
      if (seen.has(rule.metricName)) {
        problems.push({
          ...where,
          path: `${where.path}.${field}`,
          message: `two ${what} metric rules have the same name '${rule.metricName}'`,
        });
      }
      seen.add(rule.metricName);
      const matched = matching(rule.metricName);
      if (matched.length === 0) {
        problems.push({
          ...where,
          path: `${where.path}.${field}`,
          message: `${field}[${i}]: Rule didn't match any metric name(s)`,
        });
      }
      return [rule, matched];
    });
  };
  const dryRun = check([...ref.dryRun, ...templates.flatMap((t) => t.dryRun)], "dryRun", "Dry-Run");
  const retention = check(
    [...ref.measurementRetention, ...templates.flatMap((t) => t.measurementRetention)],
    "measurementRetention",
    "Measurement Retention",
  );
  for (const metric of metrics) {
    metric.dryRun = dryRun.some(([, matched]) => matched.includes(metric.name));
    const limit = retention.filter(([, matched]) => matched.includes(metric.name)).at(-1)?.[0].limit;
    if (limit !== undefined) metric.measurementRetention = limit;
  }
}

function normalizeProvider(
  p: ArgoMetric["provider"],
  report: (field: string, message: string) => void,
): ProviderInput | undefined {
  const given = Object.entries(p).filter(([, v]) => v !== undefined);
  if (given.length !== 1) {
    report("provider", given.length === 0 ? "no provider specified" : "multiple providers specified");
    return undefined;
  }
  if (p.plugin) {
    const names = Object.keys(p.plugin);
    const other = names.find((n) => n !== JUDGE_PLUGIN && n !== LAMBDA_PLUGIN);
    if (other !== undefined || names.length !== 1) {
      report(
        other !== undefined ? `provider.plugin.${other}` : "provider.plugin",
        other !== undefined
          ? `the metric plugin "${other}" is not supported: the plugins this controller runs are ${JUDGE_PLUGIN} and ${LAMBDA_PLUGIN}`
          : `name one plugin: ${JUDGE_PLUGIN} or ${LAMBDA_PLUGIN}`,
      );
      return undefined;
    }
    if (names[0] === LAMBDA_PLUGIN) {
      const parsed = LambdaProviderSchema.safeParse(p.plugin[LAMBDA_PLUGIN]);
      if (!parsed.success) {
        for (const issue of parsed.error.issues)
          report(joinPath([`provider.plugin.${LAMBDA_PLUGIN}`, ...issue.path]), issueMessage(issue));
        return undefined;
      }
      return { lambda: parsed.data };
    }
    const base = `provider.plugin.${JUDGE_PLUGIN}`;
    const judge = loadJudge(p.plugin[JUDGE_PLUGIN], base, {
      report,
      provider: (raw, path) => readingProvider(raw, path, report),
    });
    return judge ? { judge } : undefined;
  }
  return readingProviderOf(p, report, "provider");
}

/** A provider a judge reads a version with, written the Argo way; problems under `path`. */
function readingProvider(
  raw: Record<string, unknown>,
  path: string,
  report: (field: string, message: string) => void,
): Provider | undefined {
  const parsed = ArgoReadingProviderSchema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) report(joinPath([path, ...issue.path]), issueMessage(issue));
    return undefined;
  }
  const normalized = readingProviderOf(parsed.data, report, path);
  if (!normalized) return undefined;
  const withDefaults = ProviderSchema.safeParse(normalized);
  if (!withDefaults.success) {
    for (const issue of withDefaults.error.issues)
      report(joinPath([path, ...issue.path]), issueMessage(issue));
    return undefined;
  }
  return withDefaults.data;
}

function readingProviderOf(
  p: Omit<ArgoMetric["provider"], "plugin">,
  report: (field: string, message: string) => void,
  at: string,
): ProviderInput | undefined {
  if (p.prometheus) return { prometheus: { ...p.prometheus } };
  if (p.web) return { web: { ...p.web } };
  if (p.datadog) {
    const datadog = datadogOf(p.datadog, report, `${at}.datadog`);
    return datadog ? { datadog } : undefined;
  }
  if (p.newRelic) {
    const newRelic = newRelicOf(p.newRelic, report, `${at}.newRelic`);
    return newRelic ? { newRelic } : undefined;
  }
  if (p.graphite) {
    const graphite = graphiteOf(p.graphite, report, `${at}.graphite`);
    return graphite ? { graphite } : undefined;
  }
  if (p.influxdb) return { influxdb: influxdbOf(p.influxdb) };
  if (p.wavefront) {
    const wavefront = wavefrontOf(p.wavefront, report, `${at}.wavefront`);
    return wavefront ? { wavefront } : undefined;
  }
  if (p.kayenta) {
    const kayenta = kayentaOf(p.kayenta, report, `${at}.kayenta`);
    return kayenta ? { kayenta } : undefined;
  }
  if (p.job) return { job: structuredClone(p.job) };
  if (p.samples) {
    const window = p.samples.window === undefined ? undefined : parseDuration(p.samples.window);
    if (window && "error" in window) {
      report(`${at}.samples.window`, window.error);
      return undefined;
    }
    const { window: _window, ...rest } = p.samples;
    return { samples: { ...rest, ...(window ? { window: window.seconds } : {}) } };
  }
  if (p.cloudWatch) {
    const interval =
      p.cloudWatch.interval === undefined
        ? undefined
        : parseDuration(p.cloudWatch.interval, {
            seconds: MAX_CLOUDWATCH_WINDOW_SECONDS,
            why: "CloudWatch keeps metrics for 15 months, so a longer window reads nothing more",
          });
    if (interval && "error" in interval) {
      report(`${at}.cloudWatch.interval`, interval.error);
      return undefined;
    }
    const queries = p.cloudWatch.metricDataQueries.map((q, i) => {
      const period = q.period === undefined ? undefined : intOf(q.period);
      const statPeriod = q.metricStat ? intOf(q.metricStat.period) : undefined;
      if (period === "bad") report(`${at}.cloudWatch.metricDataQueries[${i}].period`, "must be an integer");
      if (statPeriod === "bad") {
        report(`${at}.cloudWatch.metricDataQueries[${i}].metricStat.period`, "must be an integer");
      }
      if (!q.expression && !q.metricStat) {
        report(`${at}.cloudWatch.metricDataQueries[${i}]`, "needs an expression or a metricStat");
      }
      return {
        id: q.id,
        ...(q.expression !== undefined ? { expression: q.expression } : {}),
        ...(q.label !== undefined ? { label: q.label } : {}),
        ...(q.returnData !== undefined ? { returnData: q.returnData } : {}),
        ...(typeof period === "number" ? { period } : {}),
        ...(q.metricStat
          ? {
              metricStat: {
                metric: { ...q.metricStat.metric, dimensions: q.metricStat.metric.dimensions ?? [] },
                period: typeof statPeriod === "number" ? statPeriod : 0,
                stat: q.metricStat.stat,
                ...(q.metricStat.unit !== undefined ? { unit: q.metricStat.unit } : {}),
              },
            }
          : {}),
      };
    });
    return {
      cloudWatch: { ...(interval ? { interval: interval.seconds } : {}), metricDataQueries: queries },
    };
  }
  return undefined;
}
