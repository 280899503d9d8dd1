/**
 * The CDK side of sfn-rollouts: the `RolloutController` construct and its props (also the
 * package's main entry, `sfn-rollouts`).
 *
 * @module sfn-rollouts/infra
 */

export { FUNCTION_NEEDS, type Need } from "./functions.ts";
export type { ModelRouterOptions, ModelRouterResources } from "./model-router.ts";
export type {
  EmailService,
  NotificationService,
  NotificationsProps,
  SlackService,
  TeamsService,
  WebhookService,
} from "./notifications.ts";
export { Notifications } from "./notifications.ts";
export type {
  AlbEcsTarget,
  KubernetesClusterRef,
  KubernetesTarget,
  LambdaAliasTarget,
  MetricSecretsProps,
  PluginTarget,
  PrometheusProps,
  PrometheusUrlProps,
  PrometheusWorkspaceProps,
  RolloutControllerProps,
  RolloutOptions,
  RolloutSpecSource,
  RolloutTarget,
  RolloutTrigger,
  SageMakerTarget,
} from "./props.ts";
export { EMBEDDED_CONTEXT } from "./props.ts";
export { type Rollout, RolloutController, type RolloutFunctions } from "./rollout-controller.ts";
export {
  coordinatorRoleName,
  passRoleName,
  RolloutWaves,
  type RolloutWavesProps,
  type RolloutWavesTarget,
} from "./rollout-waves.ts";
export { PropsError } from "./validate.ts";
export { WaveCoordinator, type WaveCoordinatorProps, type WaveTargetProps } from "./waves.ts";
