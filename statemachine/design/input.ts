import { z } from "zod";
import { RolloutsError } from "../errors.ts";
import { issueLines } from "../problems.ts";

/**
 * What `rollouts design` designs a canary from: the traffic, the SLO, where the weights are
 * applied, and the names of the metrics the analysis reads.
 */

/** Where the weights are applied: a traffic router splits exactly; `none` is whole pods behind one Service. */
export const ROUTERS = ["alb", "lambda", "gateway", "istio", "nginx", "none"] as const;
export type Router = (typeof ROUTERS)[number];

/** The metric names the analysis reads, and where Prometheus is. */
export interface MetricNames {
  /** The request counter, labelled with the version and the status code. */
  readonly requests: string;
  /** The label matchers that select a failed request among them: `code=~"5.."`. */
  readonly errors: string;
  /** The latency histogram's name (its `_bucket` series are read), in seconds. */
  readonly latency: string;
  /** The label that names the version serving a request. */
  readonly version: string;
  /** The Prometheus address the template's `prometheus` argument defaults to. */
  readonly prometheus: string;
}

/**
 * The names the simulation exports (`docs/simulate.md`, "What runs"): an application
 * instrumented like the local proxy. The design simulates with these, and writes the user's.
 */
export const SIMULATOR_METRICS: MetricNames = {
  requests: "http_requests_total",
  errors: 'code=~"5.."',
  latency: "http_request_duration_seconds",
  version: "version",
  prometheus: "http://prometheus:9090",
};

/** Everything a design is computed from. */
export interface DesignInput {
  /** The rollout's name (a DNS label). */
  readonly name: string;
  /** Requests per second in front of the rollout. */
  readonly rps: number;
  /** The SLO's error rate: the share of requests that may fail over its window. */
  readonly sloErrorRate: number;
  /** The SLO's 95th percentile latency, milliseconds. */
  readonly sloP95Ms: number;
  /** The error rate of a good version (the stable one today). */
  readonly baselineErrorRate: number;
  readonly replicas: number;
  readonly router: Router;
  readonly metrics: MetricNames;
  /** Requests a bad version may serve before it is stopped. */
  readonly exposureBudget: number;
  /** The longest a good version may take to be promoted, seconds. */
  readonly maxDurationSeconds: number;
  /** How often Prometheus scrapes the service, seconds: a rate() window needs several scrapes. */
  readonly scrapeIntervalSeconds: number;
}

/** A `--metrics` file, `--signal` or other design input that cannot be used: exit 2, naming it. */
export class DesignInputError extends RolloutsError {
  override readonly name = "DesignInputError";
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** One PromQL label matcher with a double-quoted value that holds no quote, backslash or brace. */
const MATCHER = /^\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=~|!~|!=|=)\s*"[^"\\{}\n]*"\s*$/;

const MetricsFileSchema = z
  .object({
    requests: z.string().regex(METRIC_NAME, "a Prometheus metric name").optional(),
    errors: z
      .string()
      .refine(
        (s) => s.split(",").every((m) => MATCHER.test(m)),
        'label matchers such as code=~"5..", comma-separated',
      )
      .optional(),
    latency: z.string().regex(METRIC_NAME, "a Prometheus histogram name").optional(),
    version: z.string().regex(LABEL_NAME, "a Prometheus label name").optional(),
    prometheus: z.url({ protocol: /^https?$/ }).optional(),
  })
  .strict();

/**
 * The metric names of a `--metrics` file (YAML or JSON, already parsed): each field overrides the
 * simulator's name; the histogram may be named with or without its `_bucket` suffix.
 */
export function metricNamesOf(value: unknown, file: string): MetricNames {
  const parsed = MetricsFileSchema.safeParse(value ?? {});
  if (!parsed.success) {
    throw new DesignInputError(
      issueLines(parsed.error)
        .map((line) => `--metrics ${file}: ${line}`)
        .join("\n"),
    );
  }
  const given = parsed.data;
  return {
    requests: given.requests ?? SIMULATOR_METRICS.requests,
    errors: given.errors?.trim() ?? SIMULATOR_METRICS.errors,
    latency: (given.latency ?? SIMULATOR_METRICS.latency).replace(/_bucket$/, ""),
    version: given.version ?? SIMULATOR_METRICS.version,
    prometheus: given.prometheus ?? SIMULATOR_METRICS.prometheus,
  };
}

/** The SLO's window: an error budget is counted over 30 days. */
export const SLO_WINDOW_SECONDS = 30 * 86_400;

/** The share of the SLO's 30-day error budget a bad version may spend by default. */
export const DEFAULT_BUDGET_SHARE = 0.001;

/**
 * The default exposure budget, in requests a bad version may serve: a version failing at the
 * SLO's rate E spends E of the error budget with every request, and the 30-day budget is
 * E × rps × 30 d failed requests, so spending 0.1% of it takes 0.001 × rps × 2,592,000 requests
 * (E cancels): 2,592 × rps, the traffic of 43.2 minutes.
 */
export function defaultExposureBudget(rps: number): number {
  return Math.floor(DEFAULT_BUDGET_SHARE * rps * SLO_WINDOW_SECONDS);
}
