import { z } from "zod";
import {
  LIMIT_MESSAGES,
  MAX_MEASUREMENT_RETENTION,
  MAX_PROVIDER_TIMEOUT_SECONDS,
  MAX_REPLICAS,
  MAX_WAIT_SECONDS,
} from "./limits.ts";
import {
  DATADOG_AGGREGATORS,
  HeaderFields,
  JobProviderSchema,
  RangeQueryFields,
  SamplesSigv4Schema,
  Sigv4Fields,
} from "./providers.ts";
import { re2Problem } from "./re2.ts";

/**
 * Argo Rollouts objects (`argoproj.io/v1alpha1`) as users write them. Kubernetes metadata and the
 * pod template are kept loose (they carry anything); the parts we act on — steps, analysis
 * metrics, providers — are strict, so a typo is reported instead of silently ignored.
 */

/**
 * A number or a string, as Kubernetes' IntOrString. NaN and infinities (YAML's `.nan`, `.inf`)
 * pass here so that the field's own reader names them (`got NaN`) instead of zod's "Invalid input".
 */
export const IntOrString = z.custom<number | string>((v) => typeof v === "number" || typeof v === "string", {
  error: "expected a number or a string",
});
const NameValue = z.object(HeaderFields).strict();
/** Whole seconds a rollout waits (a delay, an auto-promotion): at most a year. */
const WaitSeconds = z.number().int().nonnegative().max(MAX_WAIT_SECONDS, LIMIT_MESSAGES.wait);
const Replicas = z.number().int().nonnegative().max(MAX_REPLICAS, LIMIT_MESSAGES.replicas);
const ProviderTimeout = z
  .number()
  .int()
  .positive()
  .max(MAX_PROVIDER_TIMEOUT_SECONDS, LIMIT_MESSAGES.providerTimeout);

export const ArgoArgumentSchema = z
  .object({
    name: z.string().min(1),
    value: z.string().optional(),
    valueFrom: z
      .object({
        podTemplateHashValue: z.enum(["Stable", "Latest"]).optional(),
        fieldRef: z
          .object({ fieldPath: z.string().min(1) })
          .strict()
          .optional(),
        secretKeyRef: z.object({ name: z.string(), key: z.string() }).strict().optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

export const ArgoPrometheusSchema = z
  .object({
    /** Absent: the controller's default Prometheus. */
    address: z.string().optional(),
    query: z.string().min(1),
    timeout: ProviderTimeout.optional(),
    insecure: z.boolean().optional(),
    headers: z.array(NameValue).optional(),
    authentication: z
      .object({ sigv4: z.object(Sigv4Fields).strict().optional() })
      .strict()
      .optional(),
    rangeQuery: z.object(RangeQueryFields).strict().optional(),
  })
  .strict();

export const ArgoWebSchema = z
  .object({
    url: z.string().min(1),
    method: z.enum(["GET", "POST", "PUT"]).optional(),
    headers: z.array(NameValue).optional(),
    body: z.string().optional(),
    jsonBody: z.unknown().optional(),
    jsonPath: z.string().optional(),
    timeoutSeconds: ProviderTimeout.optional(),
    insecure: z.boolean().optional(),
  })
  .strict();

export const ArgoCloudWatchSchema = z
  .object({
    interval: z.string().optional(),
    metricDataQueries: z
      .array(
        z
          .object({
            id: z.string().min(1),
            expression: z.string().optional(),
            label: z.string().optional(),
            metricStat: z
              .object({
                metric: z
                  .object({
                    namespace: z.string().optional(),
                    metricName: z.string().optional(),
                    dimensions: z
                      .array(z.object({ name: z.string(), value: z.string() }).strict())
                      .optional(),
                  })
                  .strict(),
                period: IntOrString,
                stat: z.string(),
                unit: z.string().optional(),
              })
              .strict()
              .optional(),
            period: IntOrString.optional(),
            returnData: z.boolean().optional(),
          })
          .strict(),
      )
      .min(1),
  })
  .strict();

export const ArgoSamplesSchema = z
  .object({
    address: z.string().min(1),
    primary: z.string().min(1),
    candidate: z.string().min(1),
    window: IntOrString.optional(),
    sigv4: SamplesSigv4Schema.optional(),
  })
  .strict();

/** Argo's `datadog` provider (`DatadogMetric`), its durations as Go duration strings. */
export const ArgoDatadogSchema = z
  .object({
    interval: z.string().optional(),
    query: z.string().optional(),
    queries: z.record(z.string(), z.string()).optional(),
    formula: z.string().optional(),
    apiVersion: z.enum(["v1", "v2"]).optional(),
    aggregator: z.enum(DATADOG_AGGREGATORS).optional(),
    secretRef: z
      .object({ name: z.string().optional(), namespaced: z.boolean().optional() })
      .strict()
      .optional(),
    requestTimeout: z.string().optional(),
  })
  .strict();

/** Argo's `newRelic` provider (`NewRelicMetric`). */
export const ArgoNewRelicSchema = z
  .object({
    profile: z.string().optional(),
    query: z.string().min(1),
    timeout: z.number().int().optional(),
  })
  .strict();

/** Argo's `graphite` provider (`GraphiteMetric`): the render API's address and query. */
export const ArgoGraphiteSchema = z
  .object({
    address: z.string().optional(),
    query: z.string().optional(),
  })
  .strict();

/** Argo's `influxdb` provider (`InfluxdbMetric`): a Flux query and the secret of the server. */
export const ArgoInfluxdbSchema = z
  .object({
    profile: z.string().optional(),
    query: z.string().optional(),
  })
  .strict();

/** Argo's `wavefront` provider (`WavefrontMetric`): the Wavefront host and a query. */
export const ArgoWavefrontSchema = z
  .object({
    address: z.string().optional(),
    query: z.string().optional(),
  })
  .strict();

/** One side of a Kayenta scope (`ScopeDetail`): what Kayenta reads for the control or the experiment. */
const ArgoKayentaScopeDetailSchema = z
  .object({
    scope: z.string().optional(),
    region: z.string().optional(),
    step: z.number().int().optional(),
    start: z.string().optional(),
    end: z.string().optional(),
  })
  .strict();

/**
 * Argo's `kayenta` provider (`KayentaMetric`): the Kayenta service, the canary config by name, the
 * accounts, the score's thresholds and the scopes.
 */
export const ArgoKayentaSchema = z
  .object({
    address: z.string().optional(),
    application: z.string().optional(),
    canaryConfigName: z.string().optional(),
    metricsAccountName: z.string().optional(),
    configurationAccountName: z.string().optional(),
    storageAccountName: z.string().optional(),
    threshold: z
      .object({ pass: z.number().int().optional(), marginal: z.number().int().optional() })
      .strict()
      .optional(),
    scopes: z
      .array(
        z
          .object({
            name: z.string().optional(),
            controlScope: ArgoKayentaScopeDetailSchema.optional(),
            experimentScope: ArgoKayentaScopeDetailSchema.optional(),
          })
          .strict(),
      )
      .optional(),
    lookback: z.boolean().optional(),
  })
  .strict();

/** The providers that read one system, as Argo writes them: what a judge reads each version with. */
export const ArgoReadingProviderFields = {
  prometheus: ArgoPrometheusSchema.optional(),
  web: ArgoWebSchema.optional(),
  cloudWatch: ArgoCloudWatchSchema.optional(),
  samples: ArgoSamplesSchema.optional(),
  datadog: ArgoDatadogSchema.optional(),
  newRelic: ArgoNewRelicSchema.optional(),
  graphite: ArgoGraphiteSchema.optional(),
  influxdb: ArgoInfluxdbSchema.optional(),
  wavefront: ArgoWavefrontSchema.optional(),
  kayenta: ArgoKayentaSchema.optional(),
  // Argo's `JobMetric` as it is: the Job's labels and annotations, and its JobSpec.
  job: JobProviderSchema.optional(),
};
export const ArgoReadingProviderSchema = z.object(ArgoReadingProviderFields).strict();

/** Providers Argo has that we do not run: named so the message can say so. */
export const UNSUPPORTED_PROVIDERS = ["skywalking"] as const;

export const ArgoMetricSchema = z
  .object({
    name: z.string().min(1),
    interval: z.string().optional(),
    initialDelay: z.string().optional(),
    count: IntOrString.optional(),
    failureLimit: IntOrString.optional(),
    inconclusiveLimit: IntOrString.optional(),
    consecutiveErrorLimit: IntOrString.optional(),
    consecutiveSuccessLimit: IntOrString.optional(),
    successCondition: z.string().optional(),
    failureCondition: z.string().optional(),
    provider: z
      .object({
        ...ArgoReadingProviderFields,
        /** Argo's extension point for metric providers: `{"sfn-rollouts/judge": {...}}` runs a judge. */
        plugin: z.record(z.string(), z.unknown()).optional(),
      })
      .strict(),
  })
  .strict();

const MetricNameRef = z.object({ metricName: z.string().min(1) }).strict();
const RetentionRef = z
  .object({
    metricName: z.string().min(1),
    limit: z.number().int().positive().max(MAX_MEASUREMENT_RETENTION, LIMIT_MESSAGES.retention),
  })
  .strict();

export const ArgoAnalysisTemplateSpecSchema = z
  .object({
    args: z.array(ArgoArgumentSchema).optional(),
    metrics: z.array(z.unknown()).min(1),
    dryRun: z.array(MetricNameRef).optional(),
    measurementRetention: z.array(RetentionRef).optional(),
  })
  .strict();

const TemplateRef = z
  .object({ templateName: z.string().min(1), clusterScope: z.boolean().optional() })
  .strict();

export const ArgoAnalysisRefSchema = z
  .object({
    templates: z.array(TemplateRef).min(1),
    args: z.array(ArgoArgumentSchema).optional(),
    dryRun: z.array(MetricNameRef).optional(),
    measurementRetention: z.array(RetentionRef).optional(),
  })
  .strict();

export const ArgoBackgroundAnalysisSchema = ArgoAnalysisRefSchema.extend({
  startingStep: z.number().int().nonnegative().optional(),
}).strict();

const HeaderMatch = z
  .object({
    headerName: z.string().min(1),
    headerValue: z
      .object({ exact: z.string().optional(), prefix: z.string().optional(), regex: z.string().optional() })
      .strict()
      .refine((v) => Object.values(v).filter((x) => x !== undefined).length === 1, {
        message: "headerValue needs exactly one of exact, prefix, regex",
      })
      .superRefine((v, ctx) => {
        const problem = v.regex === undefined ? undefined : re2Problem(v.regex);
        if (problem) ctx.addIssue({ code: "custom", path: ["regex"], message: problem });
      }),
  })
  .strict();

export const ArgoStepSchemas = {
  setWeight: z.number().int().min(0).max(100),
  pause: z.object({ duration: IntOrString.optional() }).strict(),
  analysis: ArgoAnalysisRefSchema,
  setHeaderRoute: z.object({ name: z.string().min(1), match: z.array(HeaderMatch).optional() }).strict(),
  setMirrorRoute: z
    .object({
      name: z.string().min(1),
      percentage: z.number().int().min(0).max(100).optional(),
      match: z.array(z.record(z.string(), z.unknown())).optional(),
    })
    .strict(),
  setCanaryScale: z
    .object({
      replicas: z.number().int().nonnegative().optional(),
      weight: z.number().int().nonnegative().optional(),
      matchTrafficWeight: z.boolean().optional(),
    })
    .strict(),
  experiment: z
    .object({
      duration: IntOrString.optional(),
      templates: z
        .array(
          z
            .object({
              name: z.string().min(1),
              specRef: z.enum(["stable", "canary"]),
              replicas: z.number().int().nonnegative().optional(),
              weight: z.number().int().nonnegative().optional(),
              selector: z.record(z.string(), z.unknown()).optional(),
              metadata: z.record(z.string(), z.unknown()).optional(),
              service: z.record(z.string(), z.unknown()).optional(),
            })
            .strict(),
        )
        .min(1),
      analyses: z
        .array(
          z
            .object({
              name: z.string().min(1),
              templateName: z.string().min(1),
              clusterScope: z.boolean().optional(),
              args: z.array(ArgoArgumentSchema).optional(),
              requiredForCompletion: z.boolean().optional(),
            })
            .strict(),
        )
        .optional(),
      dryRun: z.array(MetricNameRef).optional(),
      analysisRunMetadata: z.record(z.string(), z.unknown()).optional(),
    })
    .strict(),
} as const;

/** Steps Argo has that we reject, with the reason a user needs. */
export const REJECTED_STEPS: Record<string, string> = {
  plugin: "plugin steps are not supported",
};

/**
 * Argo's traffic routers that no target drives, by their `trafficRouting` field, with what each
 * is. The Kubernetes target routes with the Gateway API, Istio and NGINX, the AWS targets with
 * their own load balancer or alias; a router of one's own is a target plugin.
 */
export const REJECTED_ROUTERS: Record<string, string> = {
  smi: "SMI (the Service Mesh Interface's TrafficSplit, as Linkerd routes)",
  appMesh: "AWS App Mesh",
  ambassador: "Ambassador (Emissary-ingress)",
  apisix: "Apache APISIX",
  traefik: "Traefik",
};

/** Why a rejected router is refused, and what to route with instead. */
export const REJECTED_ROUTER_FIX =
  'route with alb, istio, nginx or the Gateway API (plugins: argoproj-labs/gatewayAPI), or drive it from a target plugin (docs/traffic.md, "Target plugins") with a trafficRouting.plugins entry';

/** Istio's subset-level split, which the istio router (host-level) does not do. */
export const ISTIO_SUBSET_SPLIT =
  "Istio subset-level traffic splitting (a DestinationRule's canary and stable subsets) is not supported: the istio router splits by host, between the VirtualService's destinations canaryService and stableService; remove destinationRule and name the two Services";

export const ArgoCanarySchema = z
  .object({
    steps: z.array(z.unknown()).optional(),
    analysis: ArgoBackgroundAnalysisSchema.optional(),
    maxSurge: IntOrString.optional(),
    maxUnavailable: IntOrString.optional(),
    canaryService: z.string().optional(),
    stableService: z.string().optional(),
    trafficRouting: z.record(z.string(), z.unknown()).optional(),
    scaleDownDelaySeconds: WaitSeconds.optional(),
    abortScaleDownDelaySeconds: WaitSeconds.optional(),
    dynamicStableScale: z.boolean().optional(),
    canaryMetadata: z.unknown().optional(),
    stableMetadata: z.unknown().optional(),
  })
  .strict();

export const ArgoBlueGreenSchema = z
  .object({
    activeService: z.string().min(1),
    previewService: z.string().optional(),
    autoPromotionEnabled: z.boolean().optional(),
    autoPromotionSeconds: WaitSeconds.optional(),
    prePromotionAnalysis: ArgoAnalysisRefSchema.optional(),
    postPromotionAnalysis: ArgoAnalysisRefSchema.optional(),
    scaleDownDelaySeconds: WaitSeconds.optional(),
    previewReplicaCount: Replicas.optional(),
    abortScaleDownDelaySeconds: WaitSeconds.optional(),
    activeMetadata: z.unknown().optional(),
    previewMetadata: z.unknown().optional(),
  })
  .strict();

export const ArgoRolloutSpecSchema = z
  .object({
    replicas: Replicas.optional(),
    selector: z.record(z.string(), z.unknown()).optional(),
    template: z.record(z.string(), z.unknown()).optional(),
    workloadRef: z.unknown().optional(),
    strategy: z
      .object({ canary: ArgoCanarySchema.optional(), blueGreen: ArgoBlueGreenSchema.optional() })
      .strict()
      .refine((s) => (s.canary ? 1 : 0) + (s.blueGreen ? 1 : 0) === 1, {
        message: "a strategy needs exactly one of canary or blueGreen",
      }),
  })
  .loose();

export const KubeObjectSchema = z
  .object({
    apiVersion: z.string().optional(),
    kind: z.string().optional(),
    metadata: z
      .object({
        name: z.string().optional(),
        namespace: z.string().optional(),
        labels: z.record(z.string(), z.string()).optional(),
        annotations: z.record(z.string(), z.string()).optional(),
      })
      .loose()
      .optional(),
    spec: z.unknown().optional(),
  })
  .loose();

export type ArgoArgument = z.infer<typeof ArgoArgumentSchema>;
export type ArgoMetric = z.infer<typeof ArgoMetricSchema>;
export type ArgoAnalysisRef = z.infer<typeof ArgoAnalysisRefSchema>;
export type ArgoRolloutSpec = z.infer<typeof ArgoRolloutSpecSchema>;
export type KubeObject = z.infer<typeof KubeObjectSchema>;
