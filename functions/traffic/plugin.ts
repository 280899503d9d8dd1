import { InvokeCommand, type InvokeCommandOutput, type LambdaClient } from "@aws-sdk/client-lambda";
import { z } from "zod";
import { awsErrorName } from "../aws-errors.ts";
import { pushedArtifact } from "./artifact.ts";
import { TargetConfigurationError, TargetNotReadyError, TargetStateError } from "./errors.ts";
import {
  PLUGIN_PROTOCOL,
  PLUGIN_RESULTS,
  PluginErrorReplySchema,
  type PluginJson,
  type PluginMethod,
  type PluginRequest,
  type PluginResult,
  pluginError,
} from "./plugin-protocol.ts";
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
  Pushed,
  Readiness,
  TargetState,
  TrafficTarget,
  WeightChange,
} from "./port.ts";
import {
  describeIssues,
  type PluginSettings,
  PluginSettingsSchema,
  parseTargetSettings,
} from "./settings.ts";
import { parseTargetState } from "./state.ts";

/**
 * A target plugin as a traffic target: each call of the port is one synchronous invocation of the
 * plugin's Lambda function (`plugin-protocol.ts`), so a team can move traffic on anything (a
 * service mesh, a CDN, its own proxy) without changing the workflow, as Argo Rollouts'
 * traffic-router plugins do for Argo. What comes back is validated against the port's types, and
 * failures become the errors the built-in targets throw:
 *
 * - an error reply named like one of `errors.ts` is thrown as that class; any other name is a
 *   `TrafficTargetError` (a plugin cannot raise the workflow's own control errors);
 * - a reply that is not valid for the method is a `TargetConfigurationError` naming the plugin, the
 *   method and the field;
 * - a plugin that crashed (`FunctionError`), a throttle, a Lambda service fault, a timeout or a
 *   payload that is not JSON is a `TargetNotReadyError`, as a Kubernetes API server's 429 or 5xx is:
 *   the workflow retries the state, then aborts;
 * - a function that does not exist, may not be invoked or refuses the request
 *   (`ResourceNotFoundException`, `AccessDeniedException`, …) is a `TargetConfigurationError`.
 *
 * The plugin's state is opaque JSON, stored as `{type: "plugin", name, state}`; a state written
 * under another plugin's name is refused. A plugin answers within the Lambda client's request
 * timeout (10 s, `functions/aws-clients.ts`): long work follows the port's start-and-poll pattern.
 */

/** What this target stores on the rollout item. */
const PluginStateSchema = z.object({ type: z.literal("plugin"), name: z.string(), state: z.json() }).strict();

/** Lambda's answers that say the function or the request is wrong, not that it failed this time. */
const CONFIGURATION_FAULTS = new Set([
  "ResourceNotFoundException",
  "AccessDeniedException",
  "InvalidParameterValueException",
  "InvalidRequestContentException",
  "RequestTooLargeException",
  "UnsupportedMediaTypeException",
]);

/** The most of a payload an error message quotes. */
const QUOTED = 300;

/** The clients of this adapter: the composition root's Lambda client. */
export interface PluginClients {
  readonly lambda: LambdaClient;
}

/** Drives one target plugin. */
export class PluginTraffic implements TrafficTarget {
  readonly type = "plugin" as const;
  readonly #settings: PluginSettings;
  readonly #lambda: LambdaClient;

  constructor(clients: PluginClients, settings: unknown) {
    this.#settings = parseTargetSettings(PluginSettingsSchema, settings, "plugin settings");
    this.#lambda = clients.lambda;
  }

  /** The pushed image (or model package): the plugin gets it in `deployCandidate` and may refuse it there. */
  artifactFor(pushed: Pushed): CandidateArtifact {
    return pushedArtifact(pushed);
  }

  async prepare(): Promise<Prepared> {
    const result = await this.#call("prepare", {});
    return { ...result, state: this.#wrap(result.state) };
  }

  async deployCandidate(state: TargetState, artifact: CandidateArtifact): Promise<TargetState> {
    const result = await this.#call("deployCandidate", { state: this.#unwrap(state), artifact });
    return this.#wrap(result.state);
  }

  async checkReadiness(state: TargetState): Promise<Readiness> {
    return this.#readiness(await this.#call("checkReadiness", { state: this.#unwrap(state) }));
  }

  async readWeights(state: TargetState): Promise<ObservedWeights> {
    return this.#call("readWeights", { state: this.#unwrap(state) });
  }

  async setWeight(
    state: TargetState,
    percent: number,
    options: { readonly overwriteDrift?: boolean } = {},
  ): Promise<WeightChange> {
    const args = { state: this.#unwrap(state), percent, options: { ...options } };
    const result = await this.#call("setWeight", args);
    return { ...result, state: this.#wrap(result.state) };
  }

  async setHeaderRoute(state: TargetState, route: HeaderRoute): Promise<HeaderRouteChange> {
    const result = await this.#call("setHeaderRoute", { state: this.#unwrap(state), route });
    return { ...result, state: this.#wrap(result.state) };
  }

  async removeHeaderRoute(state: TargetState, name: string): Promise<HeaderRouteChange> {
    const result = await this.#call("removeHeaderRoute", { state: this.#unwrap(state), name });
    return { ...result, state: this.#wrap(result.state) };
  }

  /** Every plugin is asked: one that cannot mirror answers with a `TargetConfigurationError`. */
  async setMirrorRoute(state: TargetState, route: MirrorRoute): Promise<MirrorRouteChange> {
    const result = await this.#call("setMirrorRoute", { state: this.#unwrap(state), route });
    return { ...result, state: this.#wrap(result.state) };
  }

  async promote(state: TargetState, options: PromoteOptions): Promise<TargetState> {
    const result = await this.#call("promote", { state: this.#unwrap(state), options: { ...options } });
    return this.#wrap(result.state);
  }

  async abort(state: TargetState, options: AbortOptions): Promise<Readiness> {
    const args = { state: this.#unwrap(state), options: { ...options } };
    return this.#readiness(await this.#call("abort", args));
  }

  async scaleDown(state: TargetState): Promise<Readiness> {
    return this.#readiness(await this.#call("scaleDown", { state: this.#unwrap(state) }));
  }

  #readiness(result: PluginResult<"checkReadiness">): Readiness {
    return { ...result, state: this.#wrap(result.state) };
  }

  #wrap(state: PluginJson): TargetState {
    return { type: "plugin", name: this.#settings.name, state };
  }

  /** The plugin's own state out of the stored one, which must be this plugin's. */
  #unwrap(input: TargetState): PluginJson {
    const stored = parseTargetState(PluginStateSchema, input, `plugin "${this.#settings.name}"`);
    if (stored.name !== this.#settings.name) {
      throw new TargetStateError(
        `the stored state is plugin "${stored.name}"'s, and this target is plugin "${this.#settings.name}": a state is only handed back to the plugin that wrote it`,
      );
    }
    return stored.state;
  }

  /** `plugin "NAME" METHOD`: where a failure happened, at the start of every message. */
  #where(method: PluginMethod): string {
    return `plugin "${this.#settings.name}" ${method}`;
  }

  /** One call: the request sent, the reply read and validated, an error reply thrown as its class. */
  async #call<M extends PluginMethod>(method: M, args: PluginRequest["args"]): Promise<PluginResult<M>> {
    const { name, config } = this.#settings;
    const request: PluginRequest = { protocol: PLUGIN_PROTOCOL, method, name, config, args };
    const reply = await this.#invoke(method, request);
    const where = this.#where(method);
    const failed = PluginErrorReplySchema.safeParse(reply);
    if (failed.success) throw pluginError(failed.data.error, where);
    const schema: z.ZodType = PLUGIN_RESULTS[method];
    const answered = z.object({ result: schema }).safeParse(reply);
    if (!answered.success) {
      throw new TargetConfigurationError(describeIssues(answered.error, `reply of ${where}`), {
        cause: answered.error,
      });
    }
    return answered.data.result as PluginResult<M>;
  }

  /** The invocation, and its payload as JSON; a fault of the call itself as the error it is. */
  async #invoke(method: PluginMethod, request: PluginRequest): Promise<unknown> {
    const where = this.#where(method);
    const arn = this.#settings.functionArn;
    let out: InvokeCommandOutput;
    try {
      out = await this.#lambda.send(
        new InvokeCommand({
          FunctionName: arn,
          InvocationType: "RequestResponse",
          Payload: new TextEncoder().encode(JSON.stringify(request)),
        }),
      );
    } catch (error) {
      const fault = awsErrorName(error) ?? "Error";
      const message = `${where}: could not invoke ${arn}: ${fault}: ${(error as Error)?.message ?? String(error)}`;
      throw CONFIGURATION_FAULTS.has(fault)
        ? new TargetConfigurationError(message, { cause: error })
        : new TargetNotReadyError(message, { cause: error });
    }
    const text = out.Payload ? new TextDecoder().decode(out.Payload) : "";
    if (out.FunctionError !== undefined) {
      throw new TargetNotReadyError(`${where}: the function ${arn} failed: ${crashOf(text)}`);
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new TargetNotReadyError(
        `${where}: the function ${arn} answered with a payload that is not JSON: ${quote(text)}`,
      );
    }
  }
}

/** Lambda's error payload (`{errorType, errorMessage}`) in one line, or the payload quoted. */
function crashOf(text: string): string {
  try {
    const error = JSON.parse(text) as { errorType?: unknown; errorMessage?: unknown };
    if (typeof error.errorMessage === "string") {
      return `${typeof error.errorType === "string" ? error.errorType : "Error"}: ${quote(error.errorMessage)}`;
    }
  } catch {
    // Not Lambda's error payload: quoted as it is.
  }
  return quote(text);
}

function quote(text: string): string {
  if (text.length === 0) return "(empty)";
  return text.length > QUOTED ? `${text.slice(0, QUOTED)}…` : text;
}
