import { z } from "zod";
import { ARGO_DEFAULTS } from "./defaults.ts";
import {
  LIMIT_MESSAGES,
  MAX_CLOUDWATCH_WINDOW_SECONDS,
  MAX_PROVIDER_TIMEOUT_SECONDS,
  MAX_WAIT_SECONDS,
} from "./limits.ts";

/**
 * An address a provider requests over HTTP: `http://` or `https://` and a host, nothing else (a
 * `file:` URL, a bare host). Placeholders filled when the analysis starts (`{{rollout.latest}}`)
 * may be anywhere after the scheme.
 */
export const HTTP_URL = /^https?:\/\/[^\s/?#]+/i;
/** A URL's scheme (`ftp` of `ftp://x`), when it has one. */
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;

/**
 * The web provider's URL: http or https. Another scheme is refused with the words Go's net/http
 * measures it with in Argo (`Get "ftp://x": unsupported protocol scheme "ftp"`), here when the
 * spec loads rather than at the first measurement.
 */
function webUrlProblem(url: string, method: string): string | undefined {
  if (HTTP_URL.test(url)) return undefined;
  const scheme = SCHEME.exec(url)?.[1];
  const got = JSON.stringify(url.slice(0, 100));
  if (scheme === undefined || /^https?$/i.test(scheme)) {
    return `url must be an http:// or https:// URL, got ${got}: providers are read over HTTP(S) only`;
  }
  const op = method.charAt(0) + method.slice(1).toLowerCase();
  return `${op} ${got}: unsupported protocol scheme ${JSON.stringify(scheme)} (url must be an http:// or https:// URL: providers are read over HTTP(S) only)`;
}

const ProviderTimeout = z
  .number()
  .positive()
  .max(MAX_PROVIDER_TIMEOUT_SECONDS, LIMIT_MESSAGES.providerTimeout);

/** A header a provider sends, as Argo writes it (`key`, `value`). */
export const HeaderFields = { key: z.string(), value: z.string() };

/** Prometheus' (Amazon Managed Service for Prometheus) SigV4 signing, as Argo writes it. */
export const Sigv4Fields = {
  region: z.string().optional(),
  profile: z.string().optional(),
  roleArn: z.string().optional(),
};

/**
 * A Prometheus range query, as Argo writes it (`PrometheusRangeQueryArgs`): `start` and `end` are
 * expressions whose value is a time (`now() - duration("10m")`, `now()`), evaluated at the
 * measurement's time; `step` a Go duration (`1m`). Argo reads them when it measures, so an
 * unreadable one is an Error measurement with Argo's message.
 */
export const RangeQueryFields = { start: z.string(), end: z.string(), step: z.string() };

/**
 * Metric providers as the normalized spec holds them: Argo's fields with Argo's defaults applied
 * (plus `samples`, our per-version summary provider). A judge reads each version through one of
 * these, so they are kept apart from the metric that may embed them.
 */

/** A metric provider, as Argo documents it (plus `samples`, our per-version summary provider). */
export const PrometheusProviderSchema = z
  .object({
    /** Empty: the controller's default Prometheus (its `prometheus` prop). */
    address: z.string().default(""),
    query: z.string().min(1),
    timeout: ProviderTimeout.default(ARGO_DEFAULTS.provider.prometheusTimeoutSeconds),
    insecure: z.boolean().default(false),
    headers: z.array(z.object(HeaderFields)).default([]),
    authentication: z.object({ sigv4: z.object(Sigv4Fields).optional() }).optional(),
    /** A range query (`/api/v1/query_range`) instead of an instant query. */
    rangeQuery: z.object(RangeQueryFields).strict().optional(),
  })
  .strict();

export const WebProviderSchema = z
  .object({
    url: z.string(),
    method: z.enum(["GET", "POST", "PUT"]).default("GET"),
    headers: z.array(z.object(HeaderFields)).default([]),
    body: z.string().optional(),
    jsonBody: z.unknown().optional(),
    jsonPath: z.string().optional(),
    timeoutSeconds: ProviderTimeout.default(ARGO_DEFAULTS.provider.webTimeoutSeconds),
    insecure: z.boolean().default(false),
  })
  .strict()
  .superRefine((web, ctx) => {
    const problem = webUrlProblem(web.url, web.method);
    if (problem) ctx.addIssue({ code: "custom", path: ["url"], message: problem, input: web.url });
  });

export const CloudWatchMetricStatSchema = z
  .object({
    metric: z
      .object({
        namespace: z.string().optional(),
        metricName: z.string().optional(),
        dimensions: z.array(z.object({ name: z.string(), value: z.string() })).default([]),
      })
      .strict(),
    period: z.number().int().positive(),
    stat: z.string(),
    unit: z.string().optional(),
  })
  .strict();

export const CloudWatchProviderSchema = z
  .object({
    /** Seconds of history to read; Argo's default is 5 minutes. */
    interval: z
      .number()
      .positive()
      .max(MAX_CLOUDWATCH_WINDOW_SECONDS, LIMIT_MESSAGES.cloudWatchWindow)
      .default(ARGO_DEFAULTS.provider.cloudWatchIntervalSeconds),
    metricDataQueries: z
      .array(
        z
          .object({
            id: z.string().min(1),
            expression: z.string().optional(),
            label: z.string().optional(),
            metricStat: CloudWatchMetricStatSchema.optional(),
            period: z.number().int().positive().optional(),
            returnData: z.boolean().optional(),
          })
          .strict(),
      )
      .min(1),
  })
  .strict();

/**
 * The URL of the rollout's model router (its Function URL), as a samples `address` (or an arg
 * value that becomes one): the RolloutController fills it in when it deploys the router.
 */
export const MODEL_ROUTER_URL = "{{rollout.modelRouter}}";

/**
 * SigV4 for the samples provider: the region defaults to the address's, then `AWS_REGION`; `false`
 * leaves every read unsigned, a Function URL's included (auth `NONE`, read without credentials).
 */
export const SamplesSigv4Schema = z.union([
  z.object({ region: z.string().min(1).optional() }).strict(),
  z.literal(false),
]);

export const SamplesProviderSchema = z
  .object({
    address: z.string().refine((url) => url.startsWith(MODEL_ROUTER_URL) || HTTP_URL.test(url), {
      error: (issue) =>
        `address must be an http:// or https:// URL or ${MODEL_ROUTER_URL}, got ${JSON.stringify(String(issue.input).slice(0, 100))}: providers are read over HTTP(S) only`,
    }),
    primary: z.string().min(1),
    candidate: z.string().min(1),
    /** Seconds of samples to compare. */
    window: z.number().positive().max(MAX_WAIT_SECONDS, LIMIT_MESSAGES.wait).default(60),
    /**
     * Sign the request with SigV4 (service `lambda`), for a Function URL whose auth is `AWS_IAM`.
     * A `*.lambda-url.<region>.on.aws` address is signed without it, unless it is `false`.
     */
    sigv4: SamplesSigv4Schema.optional(),
  })
  .strict();

/** The metric plugin that measures with a Lambda function. */
export const LAMBDA_PLUGIN = "sfn-rollouts/lambda";

/**
 * A Lambda function as a measurement (the `sfn-rollouts/lambda` metric plugin, what Argo's `job`
 * provider becomes here): invoked synchronously with `payload`, its returned JSON is `result`.
 */
export const LambdaProviderSchema = z
  .object({
    /** The function's name or ARN (a qualified ARN invokes that alias or version). */
    function: z
      .string()
      .regex(
        /^(arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:)?[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9_$-]{1,128})?$/,
        "must be a Lambda function name or ARN",
      ),
    /** The event the function receives; `{{args.NAME}}` is substituted in it. */
    payload: z.unknown().optional(),
  })
  .strict();

/** Datadog's v2 aggregators (Argo's enum, in its order). */
export const DATADOG_AGGREGATORS = [
  "avg",
  "min",
  "max",
  "sum",
  "last",
  "percentile",
  "mean",
  "l2norm",
  "area",
] as const;

/**
 * A Datadog query (Argo's `datadog` provider), its durations in seconds: v1 `/api/v1/query` with
 * `query`, or v2 `/api/v2/query/scalar` with `query` or `queries` and a `formula`. The API and app
 * keys come from the controller's Datadog secret, never from the template.
 */
export const DatadogProviderSchema = z
  .object({
    /** Argo's default is `v1` (the CRD's default). */
    apiVersion: z.enum(["v1", "v2"]).default(ARGO_DEFAULTS.provider.datadogApiVersion),
    /** Seconds of history read, `[now - interval, now]`; Argo's default is 5 minutes. */
    interval: z
      .number()
      .positive()
      .max(MAX_WAIT_SECONDS, LIMIT_MESSAGES.wait)
      .default(ARGO_DEFAULTS.provider.datadogIntervalSeconds),
    query: z.string().optional(),
    queries: z.record(z.string(), z.string()).optional(),
    formula: z.string().optional(),
    aggregator: z.enum(DATADOG_AGGREGATORS).optional(),
    /** The HTTP request's timeout in seconds; Argo's default is 10. */
    requestTimeout: ProviderTimeout.default(ARGO_DEFAULTS.provider.datadogRequestTimeoutSeconds),
    /**
     * Argo's `secretRef.name`: the controller's secret of that name (`metricSecrets.named`) holds
     * the keys; absent, the environment's `DD_*` keys, then the controller's Datadog secret.
     */
    secret: z.string().min(1).optional(),
  })
  .strict();

/**
 * An NRQL query through New Relic's NerdGraph API (Argo's `newRelic` provider). The account, the
 * personal API key and the region come from the controller's New Relic secret.
 */
export const NewRelicProviderSchema = z
  .object({
    query: z.string().min(1),
    /** NRQL's own timeout in seconds, sent to NerdGraph; Argo's default is 5. */
    timeout: z
      .number()
      .int()
      .nonnegative()
      .max(MAX_PROVIDER_TIMEOUT_SECONDS, LIMIT_MESSAGES.providerTimeout)
      .default(ARGO_DEFAULTS.provider.newRelicTimeoutSeconds),
    /** Argo's `profile`: the controller's secret of that name (`metricSecrets.named`); absent, its New Relic secret. */
    profile: z.string().min(1).optional(),
  })
  .strict();

/**
 * A Graphite render query (Argo's `graphite` provider): `GET {address}/render?{query}&format=json`.
 * Graphite has no key here, as in Argo.
 */
export const GraphiteProviderSchema = z
  .object({
    /** The Graphite server, `http://` or `https://` (a path is kept: `http://host/graphite`). */
    address: z.string().regex(HTTP_URL, "must be an http:// or https:// URL"),
    /** The render API's parameters, `target=…&from=-5min` (whitespace is removed, as Argo does). */
    query: z.string().default(""),
  })
  .strict();

/**
 * A Flux query through InfluxDB's v2 API (Argo's `influxdb` provider). The server's address, the
 * organization and the token come from the controller's InfluxDB secret.
 */
export const InfluxdbProviderSchema = z
  .object({
    /** The Flux query, sent as written. */
    query: z.string().default(""),
    /** Argo's `profile`: the controller's secret of that name (`metricSecrets.named`); absent, its InfluxDB secret. */
    profile: z.string().min(1).optional(),
  })
  .strict();

/**
 * A Wavefront query at the measurement's instant (Argo's `wavefront` provider):
 * `GET https://{address}/api/v2/chart/api`. The token comes from the controller's Wavefront
 * secret, by address.
 */
export const WavefrontProviderSchema = z
  .object({
    /** The Wavefront host, without a scheme (`example.wavefront.com`), read over https. */
    address: z
      .string()
      .regex(/^[^\s/?#@]+$/, "must be a host (example.wavefront.com), without a scheme or a path"),
    /** The query, in Wavefront's query language. */
    query: z.string().default(""),
  })
  .strict();

/** One side of a Kayenta scope, as Kayenta's canary request names it (`region` is sent as `location`). */
const KayentaScopeDetailSchema = z
  .object({
    scope: z.string().default(""),
    region: z.string().default(""),
    step: z.number().int().default(0),
    /** RFC 3339; empty: the measurement's window (`interval` before it, or since the run began with `lookback`). */
    start: z.string().default(""),
    /** RFC 3339; empty: the measurement's time. */
    end: z.string().default(""),
  })
  .strict();

/**
 * A Kayenta canary analysis (Argo's `kayenta` provider): the config found by name in
 * `GET {address}/canaryConfig`, a canary execution started with `POST {address}/canary/{id}`, and
 * its score read with `GET {address}/canary/{executionId}` at later ticks until it is complete.
 */
export const KayentaProviderSchema = z
  .object({
    /** The Kayenta service, `http://` or `https://`. */
    address: z.string().regex(HTTP_URL, "must be an http:// or https:// URL"),
    application: z.string().default(""),
    canaryConfigName: z.string().default(""),
    metricsAccountName: z.string().default(""),
    configurationAccountName: z.string().default(""),
    storageAccountName: z.string().default(""),
    /** A score at or above `pass` is Successful, at or above `marginal` Inconclusive, below it Failed. */
    threshold: z
      .object({ pass: z.number().int().default(0), marginal: z.number().int().default(0) })
      .strict()
      .default({ pass: 0, marginal: 0 }),
    scopes: z
      .array(
        z
          .object({
            name: z.string().default(""),
            controlScope: KayentaScopeDetailSchema.prefault({}),
            experimentScope: KayentaScopeDetailSchema.prefault({}),
          })
          .strict(),
      )
      .default([]),
    /** An empty start is the analysis run's start rather than one `interval` before the measurement. */
    lookback: z.boolean().default(false),
  })
  .strict();

/**
 * A Kubernetes Job as a measurement (Argo's `job` provider): the Job's labels and annotations,
 * and its batch/v1 JobSpec as written. Created in the kubernetes target's namespace, its
 * `Complete` condition makes the measurement Successful and its `Failed` one Failed. Only a
 * rollout on the kubernetes target can run it.
 */
export const JobProviderSchema = z
  .object({
    metadata: z
      .object({
        labels: z.record(z.string(), z.string()).optional(),
        annotations: z.record(z.string(), z.string()).optional(),
      })
      .strict()
      .optional(),
    spec: z.record(z.string(), z.unknown()),
  })
  .strict();

/** The providers that read a value from a system, one key each; a judge reads versions through them. */
export const ReadingProviderFields = {
  prometheus: PrometheusProviderSchema.optional(),
  web: WebProviderSchema.optional(),
  cloudWatch: CloudWatchProviderSchema.optional(),
  samples: SamplesProviderSchema.optional(),
  lambda: LambdaProviderSchema.optional(),
  datadog: DatadogProviderSchema.optional(),
  newRelic: NewRelicProviderSchema.optional(),
  graphite: GraphiteProviderSchema.optional(),
  influxdb: InfluxdbProviderSchema.optional(),
  wavefront: WavefrontProviderSchema.optional(),
  kayenta: KayentaProviderSchema.optional(),
  job: JobProviderSchema.optional(),
};

/** True when exactly one provider key is set. */
export const exactlyOneProvider = (p: Record<string, unknown>) =>
  Object.values(p).filter((v) => v !== undefined).length === 1;

export const ProviderSchema = z.object(ReadingProviderFields).strict().refine(exactlyOneProvider, {
  message:
    "a metric needs exactly one provider (prometheus, web, cloudWatch, samples, datadog, newRelic, graphite, influxdb, wavefront, kayenta or job)",
});

export type PrometheusProvider = z.infer<typeof PrometheusProviderSchema>;
export type WebProvider = z.infer<typeof WebProviderSchema>;
export type CloudWatchProvider = z.infer<typeof CloudWatchProviderSchema>;
export type SamplesProvider = z.infer<typeof SamplesProviderSchema>;
export type LambdaProvider = z.infer<typeof LambdaProviderSchema>;
export type DatadogProvider = z.infer<typeof DatadogProviderSchema>;
export type NewRelicProvider = z.infer<typeof NewRelicProviderSchema>;
export type GraphiteProvider = z.infer<typeof GraphiteProviderSchema>;
export type InfluxdbProvider = z.infer<typeof InfluxdbProviderSchema>;
export type WavefrontProvider = z.infer<typeof WavefrontProviderSchema>;
export type KayentaProvider = z.infer<typeof KayentaProviderSchema>;
export type JobProvider = z.infer<typeof JobProviderSchema>;
export type Provider = z.infer<typeof ProviderSchema>;
