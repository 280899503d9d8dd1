import { Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type { Construct } from "constructs";
import { ENV } from "../functions/config.ts";
import { providersRead, type RolloutSpec } from "../statemachine/spec.ts";
import type { MetricSecretsProps } from "./props.ts";

/**
 * The secrets of the Datadog and New Relic metric providers: each named to the measuring functions
 * in their environment (`ROLLOUTS_DATADOG_SECRET`, `ROLLOUTS_NEWRELIC_SECRET`), and
 * `secretsmanager:GetSecretValue` on exactly that secret (and its key's decrypt, through Secrets
 * Manager only).
 */

const PROVIDERS = [
  { key: "datadog", env: ENV.datadogSecret, sid: "DatadogSecret" },
  { key: "newRelic", env: ENV.newRelicSecret, sid: "NewRelicSecret" },
] as const;

/** The measuring functions' environment entries naming the secrets. */
export function metricSecretsEnvironment(props: MetricSecretsProps | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of PROVIDERS) {
    const secret = props?.[p.key];
    if (secret) out[p.env] = secret.secretArn;
  }
  return out;
}

/** `GetSecretValue` on exactly each secret given, and `kms:Decrypt` of its key through Secrets Manager. */
export function metricSecretsStatements(
  scope: Construct,
  props: MetricSecretsProps | undefined,
): iam.PolicyStatement[] {
  const statements: iam.PolicyStatement[] = [];
  for (const p of PROVIDERS) {
    const secret = props?.[p.key];
    if (!secret) continue;
    // A secret imported by name has no suffix in its ARN; Secrets Manager adds six characters.
    const arn = secret.secretFullArn ?? `${secret.secretArn}-??????`;
    statements.push(
      new iam.PolicyStatement({ sid: p.sid, actions: ["secretsmanager:GetSecretValue"], resources: [arn] }),
    );
    if (secret.encryptionKey) {
      statements.push(
        new iam.PolicyStatement({
          sid: `${p.sid}Key`,
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

/** A rollout whose analyses read Datadog or New Relic on a controller given no secret for it. */
export function metricSecretsProblems(spec: RolloutSpec, props: MetricSecretsProps | undefined): string[] {
  const analyses = [
    ...spec.steps.flatMap((s) => (s.kind === "analysis" ? [s.analysis] : [])),
    ...(spec.backgroundAnalysis ? [spec.backgroundAnalysis.analysis] : []),
  ];
  const read = analyses.flatMap((a) =>
    a.templates.flatMap((t) => t.metrics.flatMap((m) => providersRead(m.provider))),
  );
  return PROVIDERS.filter((p) => read.some((r) => r[p.key] !== undefined) && !props?.[p.key]).map(
    (p) =>
      `spec: an analysis uses the ${p.key} provider but the controller has no metricSecrets.${p.key} (the Secrets Manager secret of its keys)`,
  );
}
