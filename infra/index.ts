/** The CDK side of sfn-rollouts: the `RolloutController` construct and its props. */

export { FUNCTION_NEEDS, type Need } from "./functions.ts";
export type {
  AlbEcsTarget,
  LambdaAliasTarget,
  LocalProxyTarget,
  PrometheusProps,
  PrometheusUrlProps,
  PrometheusWorkspaceProps,
  RolloutControllerProps,
  RolloutOptions,
  RolloutSpecSource,
  RolloutTarget,
  RolloutTrigger,
} from "./props.ts";
export { EMBEDDED_CONTEXT } from "./props.ts";
export { type Rollout, RolloutController, type RolloutFunctions } from "./rollout-controller.ts";
export { PropsError } from "./validate.ts";
export { WaveCoordinator, type WaveCoordinatorProps, type WaveTargetProps } from "./waves.ts";
