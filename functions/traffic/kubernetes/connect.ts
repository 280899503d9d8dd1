import { defaultProvider } from "@aws-sdk/credential-provider-node";
import { TargetConfigurationError } from "../errors.ts";
import type { Clock } from "../port.ts";
import { type AwsCredentialsProvider, eksTokenSource, getSecretString, parseKubeconfig } from "./auth.ts";
import type { KubeConnection, KubeEndpoint } from "./client.ts";
import type { KubernetesSettings } from "./settings.ts";

/** What a connection needs from outside: AWS credentials and the region, for EKS and Secrets Manager. */
export interface KubeConnectOptions {
  readonly credentials?: AwsCredentialsProvider;
  readonly region?: string;
  readonly fetch?: typeof fetch;
}

/** The connection the settings describe: the API server, its CA and the token of each call. */
export function connect(
  settings: KubernetesSettings,
  clock: Clock,
  options: KubeConnectOptions = {},
): KubeConnection {
  const timeoutMs = settings.requestTimeoutSeconds * 1000;
  const ca = settings.certificateAuthority
    ? Buffer.from(settings.certificateAuthority, "base64").toString("utf8")
    : undefined;
  const auth = settings.auth;
  const region = () => {
    const value =
      ("region" in auth ? auth.region : undefined) ??
      options.region ??
      process.env.AWS_REGION ??
      process.env.AWS_DEFAULT_REGION;
    if (!value)
      throw new TargetConfigurationError("kubernetes target: no region (set auth.region or AWS_REGION)");
    return value;
  };
  const credentials = () => options.credentials ?? (defaultProvider() as AwsCredentialsProvider);
  switch (auth.type) {
    case "token": {
      const endpoint: KubeEndpoint = {
        server: settings.server ?? "",
        token: auth.token,
        ...(ca ? { ca } : {}),
      };
      return { timeoutMs, endpoint: async () => endpoint };
    }
    case "eks": {
      let tokens: (() => Promise<string>) | undefined;
      return {
        timeoutMs,
        endpoint: async () => {
          tokens ??= eksTokenSource({
            clusterName: auth.clusterName,
            region: region(),
            credentials: credentials(),
            now: () => clock.now(),
          });
          return { server: settings.server ?? "", token: await tokens(), ...(ca ? { ca } : {}) };
        },
      };
    }
    case "kubeconfig-secret": {
      let cached: KubeEndpoint | undefined;
      return {
        timeoutMs,
        endpoint: async () => {
          if (!cached) {
            const text = await getSecretString({
              secretId: auth.secretArn,
              // A secret's ARN names its region.
              region: /^arn:aws[a-z-]*:secretsmanager:([a-z0-9-]+):/.exec(auth.secretArn)?.[1] ?? region(),
              credentials: credentials(),
              timeoutMs,
              ...(options.fetch ? { fetch: options.fetch } : {}),
            });
            const config = parseKubeconfig(text, `secret ${auth.secretArn}`);
            cached = {
              server: settings.server ?? config.server,
              token: config.token,
              ...((ca ?? config.ca) ? { ca: ca ?? config.ca } : {}),
            };
          }
          return cached;
        },
      };
    }
  }
}
