import { Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import type { Construct } from "constructs";
import { ENV } from "../functions/config.ts";
import { providersRead, type RolloutSpec, stepAnalysis } from "../statemachine/spec.ts";
import type { MetricSecretsProps } from "./props.ts";

/**
 * The secrets of the Datadog, New Relic, InfluxDB and Wavefront metric providers: each named to the measuring
 * functions in their environment (`ROLLOUTS_DATADOG_SECRET`, `ROLLOUTS_NEWRELIC_SECRET`,
 * `ROLLOUTS_INFLUXDB_SECRET`, `ROLLOUTS_WAVEFRONT_SECRET`, and the secrets
 * templates name, `ROLLOUTS_METRIC_SECRETS`), and `secretsmanager:GetSecretValue` on exactly those
 * secrets (and their keys' decrypt, through Secrets Manager only).
 */

const PROVIDERS = [
  { key: "datadog", env: ENV.datadogSecret, sid: "DatadogSecret", argoName: "datadog" },
  { key: "newRelic", env: ENV.newRelicSecret, sid: "NewRelicSecret", argoName: "newrelic" },
  { key: "influxdb", env: ENV.influxdbSecret, sid: "InfluxdbSecret", argoName: "influxdb" },
  { key: "wavefront", env: ENV.wavefrontSecret, sid: "WavefrontSecret", argoName: "wavefront-api-tokens" },
] as const;

/** The measuring functions' environment entries naming the secrets. */
export function metricSecretsEnvironment(
  scope: Construct,
  props: MetricSecretsProps | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of PROVIDERS) {
    const secret = props?.[p.key];
    if (secret) out[p.env] = secret.secretArn;
  }
  const named = Object.entries(props?.named ?? {});
  if (named.length > 0) {
    out[ENV.metricSecrets] = Stack.of(scope).toJsonString(
      Object.fromEntries(named.map(([name, secret]) => [name, secret.secretArn])),
    );
  }
  return out;
}

/** Every secret given, each with the statement id of its grant. */
function secretsOf(
  props: MetricSecretsProps | undefined,
): Array<{ sid: string; secret: secretsmanager.ISecret }> {
  const own = PROVIDERS.flatMap((p) => {
    const secret = props?.[p.key];
    return secret ? [{ sid: p.sid, secret }] : [];
  });
  const named = Object.entries(props?.named ?? {}).map(([name, secret], i) => ({
    sid: `MetricSecret${i}${name.replace(/[^A-Za-z0-9]/g, "")}`.slice(0, 100),
    secret,
  }));
  return [...own, ...named];
}

/** `GetSecretValue` on exactly each secret given, and `kms:Decrypt` of its key through Secrets Manager. */
export function metricSecretsStatements(
  scope: Construct,
  props: MetricSecretsProps | undefined,
): iam.PolicyStatement[] {
  const statements: iam.PolicyStatement[] = [];
  for (const { sid, secret } of secretsOf(props)) {
    // A secret imported by name has no suffix in its ARN; Secrets Manager adds six characters.
    const arn = secret.secretFullArn ?? `${secret.secretArn}-??????`;
    statements.push(
      new iam.PolicyStatement({ sid, actions: ["secretsmanager:GetSecretValue"], resources: [arn] }),
    );
    if (secret.encryptionKey) {
      statements.push(
        new iam.PolicyStatement({
          sid: `${sid}Key`,
          actions: ["kms:Decrypt"],
          resources: [secret.encryptionKey.keyArn],
          conditions: {
            StringEquals: { "kms:ViaService": `secretsmanager.${Stack.of(scope).region}.amazonaws.com` },
          },
        }),
      );
    }
  }
  return statements;
}

/**
 * A rollout whose analyses read Datadog, New Relic, InfluxDB or Wavefront through a secret the controller was not
 * given: the provider's own, or the one a template names (`secretRef.name`, `profile`).
 */
export function metricSecretsProblems(spec: RolloutSpec, props: MetricSecretsProps | undefined): string[] {
  const analyses = [
    ...spec.steps.flatMap((s) => stepAnalysis(s) ?? []),
    ...(spec.backgroundAnalysis ? [spec.backgroundAnalysis.analysis] : []),
  ];
  const read = analyses.flatMap((a) =>
    a.templates.flatMap((t) => t.metrics.flatMap((m) => providersRead(m.provider))),
  );
  const problems = new Set<string>();
  for (const p of PROVIDERS) {
    for (const r of read) {
      const provider = r[p.key];
      if (!provider) continue;
      const name =
        p.key === "datadog"
          ? r.datadog?.secret
          : p.key === "newRelic"
            ? r.newRelic?.profile
            : p.key === "influxdb"
              ? r.influxdb?.profile
              : undefined;
      const found =
        name === undefined
          ? props?.[p.key]
          : (props?.named?.[name] ?? (name === p.argoName ? props?.[p.key] : undefined));
      if (found) continue;
      problems.add(
        name === undefined
          ? `spec: an analysis uses the ${p.key} provider but the controller has no metricSecrets.${p.key} (the Secrets Manager secret of its keys)`
          : `spec: an analysis's ${p.key} provider names the secret "${name}" but the controller has no metricSecrets.named["${name}"]`,
      );
    }
  }
  return [...problems];
}
