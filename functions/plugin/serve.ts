import { z } from "zod";
import { formatIssues } from "../../statemachine/problems.ts";
import { TargetConfigurationError } from "../traffic/errors.ts";
import {
  PLUGIN_ARGS,
  PLUGIN_METHODS,
  PLUGIN_PROTOCOL,
  type PluginError,
  type PluginJson,
  type PluginMethod,
  type PluginReply,
} from "../traffic/plugin-protocol.ts";
import type {
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

/** A value, or a promise of it: a plugin's methods may answer either way. */
type Awaitable<T> = T | Promise<T>;

/** One of the port's answers with the plugin's own state `S` where the port has the stored one. */
export type WithState<T, S> = T extends { readonly state: unknown }
  ? Omit<T, "state"> & { readonly state: S }
  : T;

/**
 * A traffic target as a plugin implements it: the `TrafficTarget` port of `docs/traffic.md`, with
 * the plugin's own state `S` (any JSON) where the port has the state it stores. The workflow keeps
 * the state between calls and hands it back: the plugin holds nothing itself. Throw an error named
 * like the built-in targets' (`TargetNotReadyError`, `TargetConfigurationError`, …, exported here)
 * for the workflow to treat it as theirs; `setMirrorRoute` is optional.
 */
export interface TargetPlugin<S = PluginJson> {
  /** Reads what is in service; changes nothing. `firstRelease`: nothing serves yet. */
  prepare(): Awaitable<WithState<Prepared, S>>;
  /** Puts the candidate in place with no traffic and returns at once; refuses an artifact it cannot run. */
  deployCandidate(state: S, artifact: CandidateArtifact): Awaitable<S>;
  /** One poll of the pending operation: `ready: false` with `retryAfterSeconds`, or a `TargetNotReadyError`. */
  checkReadiness(state: S): Awaitable<WithState<Readiness, S>>;
  readWeights(state: S): Awaitable<ObservedWeights>;
  /** Sends `percent` to the candidate; a `drift` outcome, writing nothing, when someone else changed the weights. */
  setWeight(
    state: S,
    percent: number,
    options: { readonly overwriteDrift?: boolean },
  ): Awaitable<WithState<WeightChange, S>>;
  setHeaderRoute(state: S, route: HeaderRoute): Awaitable<WithState<HeaderRouteChange, S>>;
  removeHeaderRoute(state: S, name: string): Awaitable<WithState<HeaderRouteChange, S>>;
  setMirrorRoute?(state: S, route: MirrorRoute): Awaitable<WithState<MirrorRouteChange, S>>;
  promote(state: S, options: PromoteOptions): Awaitable<S>;
  abort(state: S, options: AbortOptions): Awaitable<WithState<Readiness, S>>;
  scaleDown(state: S): Awaitable<WithState<Readiness, S>>;
}

/** The Lambda handler `servePlugin` returns: a request in, `{result}` or `{error}` out, never a throw. */
export type PluginHandler = (event: unknown) => Promise<PluginReply>;

/**
 * Builds the plugin for one request from the rollout's `config` and the target's `name` (one
 * function may serve several names); called for every request, so it may validate the config
 * each time and keep nothing between calls.
 */
export type PluginFactory<S> = (
  config: Record<string, PluginJson>,
  name: string,
) => Awaitable<TargetPlugin<S>>;

const EnvelopeSchema = z.object({
  name: z.string().min(1),
  config: z.record(z.string(), z.json()),
  args: z.record(z.string(), z.unknown()),
});

/**
 * A target plugin's Lambda handler: decodes the request (an unknown protocol or method, or
 * arguments that are not the method's, are a `TargetConfigurationError` reply saying so), builds
 * the plugin with `create`, calls the method and answers `{result}`; anything thrown is answered
 * `{error: {name, message}}`, so the workflow throws the built-in error of that name.
 *
 * ```ts
 * import { servePlugin } from "sfn-rollouts/plugin";
 * export const handler = servePlugin((config, name) => new MyMeshTarget(config));
 * ```
 */
export function servePlugin<S = PluginJson>(create: PluginFactory<S>): PluginHandler {
  return async (event) => {
    try {
      const { method, name, config, args } = decode(event);
      const plugin = await create(config, name);
      return { result: await dispatch(plugin, method, args) };
    } catch (error) {
      return { error: encode(error) };
    }
  };
}

/** The request's method, name, config and arguments, each checked. */
function decode(event: unknown): {
  method: PluginMethod;
  name: string;
  config: Record<string, PluginJson>;
  args: Record<string, unknown>;
} {
  const request = (event ?? {}) as { protocol?: unknown; method?: unknown };
  if (request.protocol !== PLUGIN_PROTOCOL) {
    throw new TargetConfigurationError(
      `unknown protocol ${JSON.stringify(request.protocol) ?? "(none)"}: this plugin speaks ${PLUGIN_PROTOCOL}`,
    );
  }
  const method = request.method;
  if (typeof method !== "string" || !(PLUGIN_METHODS as readonly string[]).includes(method)) {
    throw new TargetConfigurationError(
      `unknown method ${JSON.stringify(method) ?? "(none)"}: a target plugin answers ${PLUGIN_METHODS.join(", ")}`,
    );
  }
  const envelope = EnvelopeSchema.safeParse(event);
  if (!envelope.success) {
    throw new TargetConfigurationError(`invalid ${method} request: ${formatIssues(envelope.error)}`);
  }
  const args = PLUGIN_ARGS[method as PluginMethod].safeParse(envelope.data.args);
  if (!args.success) {
    throw new TargetConfigurationError(
      `invalid arguments of ${method}: ${formatIssues(args.error, "(root)", ["args"])}`,
    );
  }
  return { ...envelope.data, method: method as PluginMethod, args: args.data };
}

/** The arguments as `PLUGIN_ARGS` checked them: each method reads its own. */
interface CheckedArgs {
  readonly state: unknown;
  readonly artifact: CandidateArtifact;
  readonly percent: number;
  readonly name: string;
  readonly route: HeaderRoute & MirrorRoute;
  readonly options: PromoteOptions & AbortOptions & { readonly overwriteDrift?: boolean };
}

/** Calls the method with its arguments; `deployCandidate` and `promote` answer `{state}`. */
async function dispatch<S>(
  plugin: TargetPlugin<S>,
  method: PluginMethod,
  args: Record<string, unknown>,
): Promise<unknown> {
  const a = args as unknown as CheckedArgs;
  const state = a.state as S;
  switch (method) {
    case "prepare":
      return plugin.prepare();
    case "deployCandidate":
      return { state: await plugin.deployCandidate(state, a.artifact) };
    case "checkReadiness":
      return plugin.checkReadiness(state);
    case "readWeights":
      return plugin.readWeights(state);
    case "setWeight":
      return plugin.setWeight(state, a.percent, a.options);
    case "setHeaderRoute":
      return plugin.setHeaderRoute(state, a.route);
    case "removeHeaderRoute":
      return plugin.removeHeaderRoute(state, a.name);
    case "setMirrorRoute":
      if (!plugin.setMirrorRoute) {
        throw new TargetConfigurationError("this plugin cannot mirror requests (it has no setMirrorRoute)");
      }
      return plugin.setMirrorRoute(state, a.route);
    case "promote":
      return { state: await plugin.promote(state, a.options) };
    case "abort":
      return plugin.abort(state, a.options);
    case "scaleDown":
      return plugin.scaleDown(state);
  }
}

/** What was thrown, as the reply carries it. */
function encode(error: unknown): PluginError {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: "Error", message: String(error) };
}
