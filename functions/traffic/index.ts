import type { ECSClient } from "@aws-sdk/client-ecs";
import type { ElasticLoadBalancingV2Client } from "@aws-sdk/client-elastic-load-balancing-v2";
import type { LambdaClient } from "@aws-sdk/client-lambda";
import type { SageMakerClient } from "@aws-sdk/client-sagemaker";
import { AlbEcsTraffic } from "./alb-ecs.ts";
import { TargetConfigurationError } from "./errors.ts";
import { type KubernetesClients, KubernetesTraffic } from "./kubernetes.ts";
import { LambdaAliasTraffic } from "./lambda-alias.ts";
import { PluginTraffic } from "./plugin.ts";
import type { Clock, TrafficTarget } from "./port.ts";
import { SageMakerTraffic } from "./sagemaker.ts";
import { ModelRouterTraffic, type RouterConfigStore } from "./sagemaker-model-router.ts";
import { describeIssues, TargetSettingsSchema } from "./settings.ts";

/**
 * The one place that maps a target's settings (from a Task's `Parameters`) to its adapter, so a
 * handler needs one line. Clients are created once per cold start by the composition root and
 * passed in; only the clients a target needs must be present.
 */
export interface TrafficClients {
  readonly elbv2?: ElasticLoadBalancingV2Client;
  readonly ecs?: ECSClient;
  readonly lambda?: LambdaClient;
  readonly sagemaker?: SageMakerClient;
  /** AWS credentials and region (EKS tokens, a kubeconfig secret), a recorder of API calls. */
  readonly kubernetes?: KubernetesClients;
  /** The model router's configuration item of a router (a SageMaker target's endpoint). */
  readonly modelRouterConfig?: (router: string) => RouterConfigStore;
}

/** Builds the router for `settings` (validated here; a bad field is a `TargetConfigurationError`). */
export function createTrafficTarget(settings: unknown, clients: TrafficClients, clock: Clock): TrafficTarget {
  const parsed = TargetSettingsSchema.safeParse(settings);
  if (!parsed.success) {
    throw new TargetConfigurationError(describeIssues(parsed.error, "target settings"), {
      cause: parsed.error,
    });
  }
  const s = parsed.data;
  switch (s.type) {
    case "alb-ecs":
      if (!clients.elbv2 || !clients.ecs)
        throw new TargetConfigurationError("alb-ecs needs the elbv2 and ecs clients");
      return new AlbEcsTraffic({ elbv2: clients.elbv2, ecs: clients.ecs }, s, clock);
    case "lambda-alias":
      if (!clients.lambda) throw new TargetConfigurationError("lambda-alias needs the lambda client");
      return new LambdaAliasTraffic({ lambda: clients.lambda }, s, clock);
    case "kubernetes":
      return new KubernetesTraffic(clients.kubernetes ?? {}, s, clock);
    case "sagemaker":
      if (!clients.sagemaker) throw new TargetConfigurationError("sagemaker needs the sagemaker client");
      if (s.router) {
        if (!clients.modelRouterConfig)
          throw new TargetConfigurationError("sagemaker with router: {type: model} needs the router's table");
        const endpoint = new SageMakerTraffic({ sagemaker: clients.sagemaker }, s, clock);
        return new ModelRouterTraffic(endpoint, s, clients.modelRouterConfig(s.endpointName));
      }
      return new SageMakerTraffic({ sagemaker: clients.sagemaker }, s, clock);
    case "plugin":
      if (!clients.lambda) throw new TargetConfigurationError("a target plugin needs the lambda client");
      return new PluginTraffic({ lambda: clients.lambda }, s);
  }
}

export * from "./errors.ts";

export type { KubernetesState } from "./kubernetes.ts";
export * from "./port.ts";
export * from "./settings.ts";
