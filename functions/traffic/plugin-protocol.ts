import { z } from "zod";
import { LIMIT_MESSAGES, MAX_WAIT_SECONDS } from "../../statemachine/limits.ts";
import {
  AliasChangedError,
  ListenerChangedError,
  TargetConfigurationError,
  TargetNotReadyError,
  TargetStateError,
  TrafficTargetError,
} from "./errors.ts";

/**
 * The wire protocol between the `plugin` target (`plugin.ts`, in the workflow's functions) and a
 * target plugin (the user's Lambda function, usually served by `servePlugin` of
 * `sfn-rollouts/plugin`): one synchronous Lambda invocation per call of the `TrafficTarget` port.
 *
 * Request: `{protocol, method, name, config, args}`; reply: `{result}` or `{error: {name, message}}`.
 * Both sides validate what they receive with the schemas below, so a plugin and the workflow can
 * be released apart: a new protocol gets a new version string, and a plugin refuses one it does
 * not speak.
 */

/** The protocol's version, in every request. */
export const PLUGIN_PROTOCOL = "sfn-rollouts.target/v1";

/** The port's methods a plugin answers (`artifactFor` is not one: it is pure, and answered by the workflow). */
export const PLUGIN_METHODS = [
  "prepare",
  "deployCandidate",
  "checkReadiness",
  "readWeights",
  "setWeight",
  "setHeaderRoute",
  "removeHeaderRoute",
  "setMirrorRoute",
  "promote",
  "abort",
  "scaleDown",
] as const;

export type PluginMethod = (typeof PLUGIN_METHODS)[number];

/** A JSON value: what a plugin's state and config are made of. */
export type PluginJson = z.infer<ReturnType<typeof z.json>>;

/**
 * The largest state a plugin may return, serialized: it is stored on the rollout's DynamoDB item
 * (at most 400 KB) and carried through the execution (256 KB per state), beside everything else.
 */
export const MAX_PLUGIN_STATE_BYTES = 32_768;

/** A plugin's own state: any JSON value, small enough to store. */
const PluginStateSchema = z.json().superRefine((state, ctx) => {
  const bytes = new TextEncoder().encode(JSON.stringify(state)).length;
  if (bytes > MAX_PLUGIN_STATE_BYTES) {
    ctx.addIssue({
      code: "custom",
      message: `a plugin's state is at most ${MAX_PLUGIN_STATE_BYTES} bytes of JSON, got ${bytes}`,
    });
  }
});

const Percent = z.number().int().min(0).max(100);
/** A share of traffic as read back: drift can leave it fractional. */
const Share = z.number().min(0).max(100);

const HeaderRouteSchema = z.object({
  name: z.string().min(1),
  match: z.array(
    z.object({
      headerName: z.string().min(1),
      headerValue: z.object({
        exact: z.string().optional(),
        prefix: z.string().optional(),
        regex: z.string().optional(),
      }),
    }),
  ),
});

const MirrorRouteSchema = z.object({
  name: z.string().min(1),
  percentage: Percent,
  match: z.array(z.record(z.string(), z.json())).optional(),
});

const ArtifactSchema = z.union([
  z.object({ image: z.string().min(1), version: z.string().optional() }),
  z.object({
    s3Bucket: z.string().optional(),
    s3Key: z.string().min(1),
    s3ObjectVersion: z.string().optional(),
    version: z.string().optional(),
  }),
  z.object({ modelPackage: z.string().min(1), version: z.string().optional() }),
]);

const Stateful = { state: PluginStateSchema };

/** What each method is given (`args`), as a plugin validates it. */
export const PLUGIN_ARGS = {
  prepare: z.object({}),
  deployCandidate: z.object({ ...Stateful, artifact: ArtifactSchema }),
  checkReadiness: z.object(Stateful),
  readWeights: z.object(Stateful),
  setWeight: z.object({
    ...Stateful,
    percent: Percent,
    options: z.object({ overwriteDrift: z.boolean().optional() }).default({}),
  }),
  setHeaderRoute: z.object({ ...Stateful, route: HeaderRouteSchema }),
  removeHeaderRoute: z.object({ ...Stateful, name: z.string().min(1) }),
  setMirrorRoute: z.object({ ...Stateful, route: MirrorRouteSchema }),
  promote: z.object({ ...Stateful, options: z.object({ scaleDownDelaySeconds: z.number().min(0) }) }),
  abort: z.object({
    ...Stateful,
    options: z.object({
      abortScaleDownDelaySeconds: z.number().min(0),
      progressDeadlineSeconds: z.number().positive().optional(),
    }),
  }),
  scaleDown: z.object(Stateful),
} satisfies Record<PluginMethod, z.ZodType>;

const ReadinessSchema = z.discriminatedUnion("ready", [
  z.object({ ready: z.literal(true), ...Stateful, message: z.string() }),
  z.object({
    ready: z.literal(false),
    ...Stateful,
    /** How long the workflow's Wait state waits before it polls again. */
    retryAfterSeconds: z.number().int().positive().max(MAX_WAIT_SECONDS, LIMIT_MESSAGES.wait),
    message: z.string(),
  }),
]);

const WeightsSchema = z.object({
  canary: Share,
  stable: Share,
  expectedCanary: Share,
  drift: z.boolean(),
  detail: z.string(),
});

const RouteChangeSchema = z.object({ ...Stateful, applied: z.boolean(), message: z.string() });

/** What each method answers (`result`), as the workflow validates it: the port's types, with the plugin's state. */
export const PLUGIN_RESULTS = {
  prepare: z.object({ ...Stateful, firstRelease: z.boolean(), stable: z.string() }),
  deployCandidate: z.object(Stateful),
  checkReadiness: ReadinessSchema,
  readWeights: WeightsSchema,
  setWeight: z.discriminatedUnion("outcome", [
    z.object({ outcome: z.literal("applied"), ...Stateful, weights: WeightsSchema }),
    z.object({ outcome: z.literal("drift"), ...Stateful, weights: WeightsSchema, message: z.string() }),
  ]),
  setHeaderRoute: RouteChangeSchema,
  removeHeaderRoute: RouteChangeSchema,
  setMirrorRoute: z.object({ ...Stateful, message: z.string() }),
  promote: z.object(Stateful),
  abort: ReadinessSchema,
  scaleDown: ReadinessSchema,
} satisfies Record<PluginMethod, z.ZodType>;

export type PluginResult<M extends PluginMethod> = z.infer<(typeof PLUGIN_RESULTS)[M]>;

/** One request to a plugin. */
export interface PluginRequest {
  readonly protocol: typeof PLUGIN_PROTOCOL;
  readonly method: PluginMethod;
  /** The target's `name`: which plugin the workflow means (one function may serve several). */
  readonly name: string;
  /** The target's `config`, as the rollout's settings give it. */
  readonly config: Record<string, PluginJson>;
  /** The method's parameters (`PLUGIN_ARGS`), the plugin's own state as `state`. */
  readonly args: Readonly<Record<string, unknown>>;
}

/** A failure as a plugin reports it: an error's `name` and `message`. */
export interface PluginError {
  readonly name: string;
  readonly message: string;
}

/** A plugin's reply. */
export type PluginReply = { readonly result: unknown } | { readonly error: PluginError };

export const PluginErrorReplySchema = z.object({
  error: z.object({ name: z.string().min(1), message: z.string() }),
});

/**
 * The errors a plugin may report by name, as the built-in targets throw them: the workflow throws
 * the same class, so the state machine's Retry and Catch treat them alike. Any other name is a
 * `TrafficTargetError`, so a plugin cannot raise the workflow's own control errors
 * (`RolloutAborted`, `ExecutionSuperseded`, `PauseRequested`).
 */
const NAMED_ERRORS: Readonly<Record<string, new (message: string) => TrafficTargetError>> = {
  TrafficTargetError,
  TargetNotReadyError,
  ListenerChangedError,
  AliasChangedError,
  TargetConfigurationError,
  TargetStateError,
};

/** The names a plugin may report for the workflow to throw as the same class. */
export const PLUGIN_ERROR_NAMES: readonly string[] = Object.keys(NAMED_ERRORS);

/**
 * The error the workflow throws for a plugin's error reply: the named class with the plugin's
 * message after `where`, or a `TrafficTargetError` that keeps the unknown name in its message.
 */
export function pluginError(error: PluginError, where: string): TrafficTargetError {
  const known = Object.hasOwn(NAMED_ERRORS, error.name) ? NAMED_ERRORS[error.name] : undefined;
  if (known) return new known(`${where}: ${error.message}`);
  return new TrafficTargetError(`${where}: ${error.name}: ${error.message}`);
}
