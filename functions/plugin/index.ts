/**
 * sfn-rollouts/plugin: write a target plugin, a traffic target implemented by your own Lambda
 * function. A rollout whose target is `{type: "plugin", name, functionArn, config}` invokes the
 * function once per call of the traffic port; `servePlugin` turns an object implementing
 * {@link TargetPlugin} into that function's handler (`docs/traffic.md`, "Target plugins").
 *
 * @module sfn-rollouts/plugin
 */

export {
  AliasChangedError,
  ListenerChangedError,
  TargetConfigurationError,
  TargetNotReadyError,
  TargetStateError,
  TrafficTargetError,
} from "../traffic/errors.ts";
export {
  PLUGIN_ERROR_NAMES,
  PLUGIN_METHODS,
  PLUGIN_PROTOCOL,
  type PluginError,
  type PluginJson,
  type PluginMethod,
  type PluginReply,
  type PluginRequest,
} from "../traffic/plugin-protocol.ts";
export type {
  AbortOptions,
  CandidateArtifact,
  HeaderRoute,
  HeaderRouteChange,
  MirrorRoute,
  MirrorRouteChange,
  ObservedWeights,
  Prepared,
  PromoteOptions,
  Readiness,
  WeightChange,
} from "../traffic/port.ts";
export {
  type PluginFactory,
  type PluginHandler,
  servePlugin,
  type TargetPlugin,
  type WithState,
} from "./serve.ts";
