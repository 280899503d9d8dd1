import { Sha256 } from "@aws-crypto/sha256-js";
import { CloudWatchClient } from "@aws-sdk/client-cloudwatch";
import { LambdaClient } from "@aws-sdk/client-lambda";
import { defaultProvider } from "@aws-sdk/credential-provider-node";
import { SignatureV4 } from "@smithy/signature-v4";
import type { Metric, PrometheusProvider } from "../../statemachine/spec.ts";
import { type ClientConfig, clientConfig } from "../aws-clients.ts";
import { type Clock, systemClock } from "../clock.ts";
import { ENV } from "../config.ts";
import type { SecretsCredentials } from "../secrets-manager.ts";
import { KubeClient } from "../traffic/kubernetes/client.ts";
import { connect, type KubeConnectOptions } from "../traffic/kubernetes/connect.ts";
import { KubernetesSettingsSchema } from "../traffic/kubernetes/settings.ts";
import { parseTargetSettings } from "../traffic/settings.ts";
import { AssumedRoles } from "./assumed-roles.ts";
import { CloudWatchMetricProvider } from "./cloudwatch.ts";
import { DatadogMetricProvider } from "./datadog.ts";
import { GraphiteMetricProvider } from "./graphite.ts";
import type { Fetch } from "./http.ts";
import { InfluxdbMetricProvider } from "./influxdb.ts";
import { type JobCluster, JobMetrics } from "./job.ts";
import { JudgeMetricProvider } from "./judge-readings.ts";
import { KayentaMetricProvider } from "./kayenta.ts";
import { LambdaMetricProvider } from "./lambda.ts";
import { NewRelicMetricProvider } from "./newrelic.ts";
import {
  type MeasureContext,
  type MetricProvider,
  type ProviderAnswer,
  type ProviderResult,
  type RunningMeasurement,
  UnsupportedProviderError,
} from "./port.ts";
import { PrometheusMetricProvider, type RequestSigner } from "./prometheus.ts";
import { SamplesMetricProvider } from "./samples.ts";
import { type SecretSource, SecretsManagerSource } from "./secrets.ts";
import { WavefrontMetricProvider } from "./wavefront.ts";
import { WebMetricProvider } from "./web.ts";

export { type Fetch, maxBodyBytesFrom } from "./http.ts";

export * from "./port.ts";
export type { RequestSigner } from "./prometheus.ts";
export { type SecretSource, SecretsManagerSource } from "./secrets.ts";

/** The adapters one process uses, one per provider kind; any may be left out. */
export interface ProviderSet {
  prometheus?: MetricProvider;
  web?: MetricProvider;
  cloudWatch?: MetricProvider;
  samples?: MetricProvider;
  lambda?: MetricProvider;
  datadog?: MetricProvider;
  newRelic?: MetricProvider;
  graphite?: MetricProvider;
  influxdb?: MetricProvider;
  wavefront?: MetricProvider;
  kayenta?: MetricProvider;
  job?: MetricProvider;
}

/**
 * Routes each metric to the adapter of the provider it names. This is what `tick` receives: one
 * provider object for a run whose metrics use different systems. A judge reads both versions back
 * through this router, so it can use every provider the process has.
 */
export class MetricProviders implements MetricProvider {
  private readonly providers: ProviderSet & { judge: MetricProvider };

  constructor(providers: ProviderSet) {
    this.providers = { ...providers, judge: new JudgeMetricProvider(this) };
  }

  measure(metric: Metric, ctx: MeasureContext): Promise<ProviderAnswer> {
    return this.providerFor(metric).measure(metric, ctx);
  }

  resume(metric: Metric, running: RunningMeasurement, ctx: MeasureContext): Promise<ProviderAnswer> {
    const provider = this.providerFor(metric);
    if (!provider.resume) {
      throw new UnsupportedProviderError(
        `metric "${metric.name}": its provider has no running measurements to resume`,
      );
    }
    return provider.resume(metric, running, ctx);
  }

  async terminate(
    metric: Metric,
    running: RunningMeasurement,
    ctx: MeasureContext,
  ): Promise<ProviderResult | undefined> {
    const provider = this.providerFor(metric);
    return provider.terminate ? provider.terminate(metric, running, ctx) : undefined;
  }

  private providerFor(metric: Metric): MetricProvider {
    const kind = (
      [
        "prometheus",
        "web",
        "cloudWatch",
        "samples",
        "lambda",
        "datadog",
        "newRelic",
        "graphite",
        "influxdb",
        "wavefront",
        "kayenta",
        "job",
        "judge",
      ] as const
    ).find((k) => metric.provider[k] !== undefined);
    const provider = kind ? this.providers[kind] : undefined;
    if (!kind || !provider) {
      throw new UnsupportedProviderError(
        `metric "${metric.name}": no ${kind ?? "known"} provider is configured in this process`,
      );
    }
    return provider;
  }
}

type Sigv4Config = NonNullable<NonNullable<PrometheusProvider["authentication"]>["sigv4"]>;

/**
 * A SigV4 signer for Amazon Managed Service for Prometheus from the default credential chain
 * (environment, profile, container, instance role). `profile` picks a named profile; `roleArn`
 * is assumed with STS from those credentials (`roles`, kept for the process) and the query is
 * signed with the role's.
 */
export function awsPrometheusSigner(
  sigv4: Sigv4Config,
  roles: AssumedRoles = new AssumedRoles(),
): RequestSigner {
  const region = sigv4.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
  if (!region) throw new UnsupportedProviderError("sigv4: no region (set sigv4.region or AWS_REGION)");
  if (sigv4.roleArn) return awsSigner("aps", region, roles.provider(sigv4.roleArn, region, sigv4.profile));
  return awsSigner("aps", region, sigv4.profile);
}

/**
 * A SigV4 signer of `service` in `region` from the default credential chain (or a named profile,
 * or a credential provider such as an assumed role's): Amazon Managed Prometheus (`aps`) and
 * Lambda Function URLs (`lambda`, the samples provider).
 */
export function awsSigner(
  service: string,
  region: string,
  from?: string | (() => Promise<SecretsCredentials>),
): RequestSigner {
  const signer = new SignatureV4({
    service,
    region,
    sha256: Sha256,
    credentials: typeof from === "function" ? from : defaultProvider(from ? { profile: from } : {}),
  });
  return {
    sign: async (request) => {
      const signed = await signer.sign({ ...request, query: request.query ?? {} });
      return { ...request, headers: signed.headers as Record<string, string> };
    },
  };
}

/** Options of {@link defaultProviders}: the clients, for tests and the local runtime. */
export interface DefaultProviderOptions {
  fetch?: Fetch;
  cloudWatch?: Pick<CloudWatchClient, "send">;
  lambda?: Pick<LambdaClient, "send">;
  /** The Prometheus of metrics that name no address (`ROLLOUTS_PROMETHEUS_URL`, SigV4 region). */
  prometheus?: { url: string; sigv4Region?: string };
  /** The SDK settings of the CloudWatch client it builds (timeouts, retries); default `clientConfig()`. */
  clientConfig?: ClientConfig;
  /** Most bytes of an HTTP provider's response read (`ROLLOUTS_METRIC_MAX_BODY_BYTES`); default 1 MiB. */
  maxBodyBytes?: number;
  /** The clock of the Kubernetes connections a Job metric makes (EKS tokens); default the system's. */
  clock?: Clock;
  /** AWS credentials and region of those connections (EKS, the kubeconfig secret). */
  kubernetes?: KubeConnectOptions;
  /** Where the roles of `sigv4.roleArn` are assumed (default STS with the default credential chain). */
  assumedRoles?: AssumedRoles;
  /**
   * The Secrets Manager secrets (ARN or name) holding the Datadog, New Relic, InfluxDB and Wavefront keys
   * (`ROLLOUTS_DATADOG_SECRET`, `ROLLOUTS_NEWRELIC_SECRET`, `ROLLOUTS_INFLUXDB_SECRET`, `ROLLOUTS_WAVEFRONT_SECRET`), and where they are read (default
   * Secrets Manager with the default credential chain).
   */
  metricSecrets?: {
    datadog?: string;
    newRelic?: string;
    influxdb?: string;
    wavefront?: string;
    /** Secrets by the names templates give them (`secretRef.name`, `profile`): `ROLLOUTS_METRIC_SECRETS`. */
    named?: Readonly<Record<string, string>>;
    source?: SecretSource;
  };
}

/**
 * The Datadog, New Relic, InfluxDB and Wavefront secrets the environment names (`ROLLOUTS_DATADOG_SECRET`,
 * `ROLLOUTS_NEWRELIC_SECRET`, `ROLLOUTS_INFLUXDB_SECRET`, `ROLLOUTS_WAVEFRONT_SECRET`, and `ROLLOUTS_METRIC_SECRETS`: a JSON object of secrets by name).
 * A `ROLLOUTS_METRIC_SECRETS` that is not such an object fails the start with its name.
 */
export function metricSecretsFrom(env: Record<string, string | undefined>): {
  datadog?: string;
  newRelic?: string;
  influxdb?: string;
  wavefront?: string;
  named?: Record<string, string>;
} {
  const datadog = env[ENV.datadogSecret];
  const newRelic = env[ENV.newRelicSecret];
  const influxdb = env[ENV.influxdbSecret];
  const wavefront = env[ENV.wavefrontSecret];
  const namedText = env[ENV.metricSecrets];
  const named = namedText ? namedSecrets(namedText) : undefined;
  return {
    ...(datadog ? { datadog } : {}),
    ...(newRelic ? { newRelic } : {}),
    ...(influxdb ? { influxdb } : {}),
    ...(wavefront ? { wavefront } : {}),
    ...(named ? { named } : {}),
  };
}

function namedSecrets(text: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const valid =
    parsed !== null &&
    typeof parsed === "object" &&
    !Array.isArray(parsed) &&
    Object.values(parsed as object).every((v) => typeof v === "string");
  if (!valid) {
    throw new Error(
      `${ENV.metricSecrets} must be a JSON object of secret ARNs by name, like {"my-secret": "arn:aws:secretsmanager:…"}`,
    );
  }
  return parsed as Record<string, string>;
}

/**
 * The composition root for metric providers, built once per cold start: real `fetch`, a
 * CloudWatch client from the default chain (created lazily, so processes without CloudWatch
 * metrics never load credentials), SigV4 for AMP.
 */
export function defaultProviders(options: DefaultProviderOptions = {}): MetricProviders {
  let cloudWatch: CloudWatchMetricProvider | undefined;
  const lazyCloudWatch: MetricProvider = {
    measure: (metric, ctx) => {
      cloudWatch ??= new CloudWatchMetricProvider(
        options.cloudWatch ?? new CloudWatchClient(options.clientConfig ?? clientConfig()),
      );
      return cloudWatch.measure(metric, ctx);
    },
  };
  let lambda: LambdaMetricProvider | undefined;
  const lazyLambda: MetricProvider = {
    measure: (metric, ctx) => {
      lambda ??= new LambdaMetricProvider(
        options.lambda ?? new LambdaClient(options.clientConfig ?? clientConfig()),
      );
      return lambda.measure(metric, ctx);
    },
  };
  // One signer (and so one credential chain) per region, for the life of the process.
  const lambdaSigners = new Map<string, RequestSigner>();
  const lambdaSigner = (region: string): RequestSigner => {
    let signer = lambdaSigners.get(region);
    if (!signer) {
      signer = awsSigner("lambda", region);
      lambdaSigners.set(region, signer);
    }
    return signer;
  };
  const http = {
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.maxBodyBytes !== undefined ? { maxBodyBytes: options.maxBodyBytes } : {}),
  };
  const secrets = options.metricSecrets?.source ?? new SecretsManagerSource();
  const datadogSecret = options.metricSecrets?.datadog;
  const newRelicSecret = options.metricSecrets?.newRelic;
  const influxdbSecret = options.metricSecrets?.influxdb;
  const wavefrontSecret = options.metricSecrets?.wavefront;
  const named = options.metricSecrets?.named ? { named: options.metricSecrets.named } : {};
  // The roles metrics name, assumed once and kept until shortly before they expire.
  const roles = options.assumedRoles ?? new AssumedRoles(options.fetch ? { fetch: options.fetch } : {});
  // One connection per kubernetes target's settings, for the life of the process.
  const clusters = new Map<string, JobCluster>();
  const clusterFor = (target: unknown): JobCluster => {
    const key = JSON.stringify(target);
    let cluster = clusters.get(key);
    if (!cluster) {
      const s = parseTargetSettings(KubernetesSettingsSchema, target, "kubernetes settings");
      cluster = {
        client: new KubeClient(connect(s, options.clock ?? systemClock, options.kubernetes ?? {})),
        namespace: s.namespace,
      };
      clusters.set(key, cluster);
    }
    return cluster;
  };
  return new MetricProviders({
    job: new JobMetrics(clusterFor),
    datadog: new DatadogMetricProvider({
      ...http,
      secrets,
      ...(datadogSecret ? { secretId: datadogSecret } : {}),
      ...named,
    }),
    newRelic: new NewRelicMetricProvider({
      ...http,
      secrets,
      ...(newRelicSecret ? { secretId: newRelicSecret } : {}),
      ...named,
    }),
    prometheus: new PrometheusMetricProvider({
      ...http,
      signerFor: (sigv4) => awsPrometheusSigner(sigv4, roles),
      ...(options.prometheus ? { defaultAddress: options.prometheus } : {}),
    }),
    web: new WebMetricProvider(http),
    graphite: new GraphiteMetricProvider(http),
    kayenta: new KayentaMetricProvider(http),
    wavefront: new WavefrontMetricProvider({
      ...http,
      secrets,
      ...(wavefrontSecret ? { secretId: wavefrontSecret } : {}),
    }),
    influxdb: new InfluxdbMetricProvider({
      ...http,
      secrets,
      ...(influxdbSecret ? { secretId: influxdbSecret } : {}),
      ...named,
    }),
    cloudWatch: lazyCloudWatch,
    samples: new SamplesMetricProvider({ ...http, signerFor: lambdaSigner }),
    lambda: lazyLambda,
  });
}
