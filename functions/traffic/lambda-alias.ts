import {
  type AliasConfiguration,
  GetAliasCommand,
  GetFunctionConfigurationCommand,
  type LambdaClient,
  PublishVersionCommand,
  UpdateAliasCommand,
  type UpdateAliasRequest,
  UpdateFunctionCodeCommand,
  type UpdateFunctionCodeRequest,
} from "@aws-sdk/client-lambda";
import { z } from "zod";
import { awsErrorName } from "../aws-errors.ts";
import { pushedArtifact } from "./artifact.ts";
import {
  AliasChangedError,
  TargetConfigurationError,
  TargetNotReadyError,
  TargetStateError,
} from "./errors.ts";
import type {
  AbortOptions,
  CandidateArtifact,
  Clock,
  HeaderRoute,
  HeaderRouteChange,
  ObservedWeights,
  Prepared,
  PromoteOptions,
  Pushed,
  Readiness,
  TargetState,
  TrafficTarget,
  WeightChange,
} from "./port.ts";
import { type LambdaAliasSettings, LambdaAliasSettingsSchema, parseTargetSettings } from "./settings.ts";
import { appliedWeight, parseTargetState, requirePercent, sharesMatch } from "./state.ts";

/**
 * A weighted Lambda alias (the `lambda` router). The candidate is a published version:
 * `UpdateFunctionCode` (the pushed image digest or a new zip), wait for `LastUpdateStatus`
 * Successful, `PublishVersion` pinned to the code hash, then the alias sends a share of the
 * invocations to it through `RoutingConfig.AdditionalVersionWeights`. Versions without traffic
 * cost nothing, so there is nothing to scale down and an abort, even after promotion, is one
 * `UpdateAlias`.
 *
 * Unlike ELBv2, Lambda has real conditional writes: `PublishVersion` and `UpdateAlias` carry the
 * `RevisionId` just read, so a concurrent change fails with `AliasChangedError` instead of being
 * overwritten.
 */

/** What this target remembers between calls; the caller stores it on the rollout item. */
export const LambdaAliasStateSchema = z
  .object({
    type: z.literal("lambda-alias"),
    /** The version the alias points at (its primary version). */
    stableVersion: z.string(),
    /** The published candidate version, once published. */
    candidateVersion: z.string().optional(),
    /** Percent of invocations this rollout last sent to the candidate. */
    canaryWeight: z.number().int().min(0).max(100),
    phase: z.enum(["prepared", "updating", "publishing", "ready", "promoted", "aborted"]),
    update: z.object({ codeSha256: z.string(), deadlineAt: z.number() }).strict().optional(),
    /** The version that was stable before the promotion, for an abort afterwards. */
    previousVersion: z.string().optional(),
  })
  .strict();

export type LambdaAliasState = z.infer<typeof LambdaAliasStateSchema>;

/** The SDK client this adapter drives. */
export interface LambdaAliasClients {
  readonly lambda: LambdaClient;
}

/** Drives one alias of one function. */
export class LambdaAliasTraffic implements TrafficTarget {
  readonly type = "lambda-alias" as const;

  artifactFor(pushed: Pushed): CandidateArtifact {
    return pushedArtifact(pushed);
  }
  readonly #settings: LambdaAliasSettings;

  constructor(
    private readonly clients: LambdaAliasClients,
    settings: unknown,
    private readonly clock: Clock,
  ) {
    this.#settings = parseTargetSettings(LambdaAliasSettingsSchema, settings, "lambda-alias settings");
  }

  async prepare(): Promise<Prepared> {
    const alias = await this.#getAlias();
    const version = alias.FunctionVersion ?? "$LATEST";
    const extra = Object.entries(alias.RoutingConfig?.AdditionalVersionWeights ?? {});
    if (extra.length > 0) {
      throw new TargetConfigurationError(
        `alias ${this.#aliasName()} already routes ${extra.map(([v, w]) => `${round(w * 100)}% to version ${v}`).join(", ")}; ` +
          "finish or abort the rollout that set it first",
      );
    }
    const state: LambdaAliasState = {
      type: "lambda-alias",
      stableVersion: version,
      canaryWeight: 0,
      phase: "prepared",
    };
    // An alias on $LATEST cannot carry weights (they need published versions): nothing stable to
    // compare with, so the workflow treats it as a first release and promotes directly.
    return {
      state,
      firstRelease: version === "$LATEST",
      stable: `${this.#aliasName()} → version ${version}`,
    };
  }

  async deployCandidate(input: TargetState, artifact: CandidateArtifact): Promise<TargetState> {
    const state = this.#state(input);
    if (!["prepared", "updating", "publishing", "ready"].includes(state.phase)) {
      throw new TargetStateError(`cannot deploy a candidate in phase ${state.phase}`);
    }
    const request: UpdateFunctionCodeRequest = { FunctionName: this.#settings.functionName };
    if (this.#settings.packageType === "Image") {
      if (!("image" in artifact)) {
        throw new TargetConfigurationError(
          `${this.#settings.functionName} is an image function: give artifact.image`,
        );
      }
      request.ImageUri = artifact.image;
    } else {
      if (!("s3Key" in artifact)) {
        throw new TargetConfigurationError(
          `${this.#settings.functionName} is a zip function: give artifact.s3Key`,
        );
      }
      const bucket = artifact.s3Bucket ?? this.#settings.s3Bucket;
      if (!bucket)
        throw new TargetConfigurationError("a zip artifact needs s3Bucket (in the artifact or the settings)");
      request.S3Bucket = bucket;
      request.S3Key = artifact.s3Key;
      if (artifact.s3ObjectVersion) request.S3ObjectVersion = artifact.s3ObjectVersion;
    }
    let out: { CodeSha256?: string };
    try {
      out = await this.clients.lambda.send(new UpdateFunctionCodeCommand(request));
    } catch (err) {
      const name = awsErrorName(err);
      // Throttling and an update already in progress are worth retrying as they are.
      if (name === "ResourceConflictException" || name === "TooManyRequestsException") throw err;
      throw new TargetNotReadyError(
        `UpdateFunctionCode of ${this.#settings.functionName} was refused: ${name ?? "error"}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    if (!out.CodeSha256) throw new TargetNotReadyError("UpdateFunctionCode returned no CodeSha256");
    const next: LambdaAliasState = {
      ...state,
      phase: "updating",
      candidateVersion: undefined,
      update: {
        codeSha256: out.CodeSha256,
        deadlineAt: this.clock.now() + this.#settings.progressDeadlineSeconds * 1000,
      },
    };
    return next;
  }

  async checkReadiness(input: TargetState): Promise<Readiness> {
    const state = this.#state(input);
    const update = state.update;
    if (state.phase === "updating" && update) {
      const conf = await this.clients.lambda.send(
        new GetFunctionConfigurationCommand({ FunctionName: this.#settings.functionName }),
      );
      if (conf.CodeSha256 !== update.codeSha256) {
        throw new AliasChangedError(
          `the code of ${this.#settings.functionName} changed while the rollout deployed it ` +
            `(expected ${update.codeSha256}, found ${conf.CodeSha256})`,
        );
      }
      if (conf.LastUpdateStatus === "Failed") {
        throw new TargetNotReadyError(
          `the code update of ${this.#settings.functionName} failed: ` +
            `${conf.LastUpdateStatusReasonCode ?? "Failed"}: ${conf.LastUpdateStatusReason ?? "no reason given"}`,
        );
      }
      if (conf.LastUpdateStatus !== "Successful") {
        return this.#notYet(state, update.deadlineAt, `code update ${conf.LastUpdateStatus ?? "InProgress"}`);
      }
      let published: { Version?: string; State?: string; StateReason?: string };
      try {
        published = await this.clients.lambda.send(
          new PublishVersionCommand({
            FunctionName: this.#settings.functionName,
            CodeSha256: update.codeSha256,
            RevisionId: conf.RevisionId,
          }),
        );
      } catch (err) {
        if (awsErrorName(err) === "PreconditionFailedException") {
          throw new AliasChangedError(
            `${this.#settings.functionName} changed between the code update and PublishVersion`,
            { cause: err },
          );
        }
        throw err;
      }
      const version = published.Version;
      if (!version) throw new TargetNotReadyError("PublishVersion returned no version");
      if (version === state.stableVersion) {
        throw new TargetConfigurationError(
          `the pushed code is the one of version ${version}, which the alias already serves: nothing to roll out`,
        );
      }
      const next: LambdaAliasState = { ...state, phase: "publishing", candidateVersion: version };
      return this.#versionState(next, published.State, published.StateReason, update.deadlineAt);
    }
    if (state.phase === "publishing" && state.candidateVersion && update) {
      const conf = await this.clients.lambda.send(
        new GetFunctionConfigurationCommand({
          FunctionName: this.#settings.functionName,
          Qualifier: state.candidateVersion,
        }),
      );
      return this.#versionState(state, conf.State, conf.StateReason, update.deadlineAt);
    }
    return { ready: true, state, message: `nothing pending in phase ${state.phase}` };
  }

  async readWeights(input: TargetState): Promise<ObservedWeights> {
    const state = this.#state(input);
    return this.#observe(state, await this.#getAlias());
  }

  async setWeight(
    input: TargetState,
    percent: number,
    options: { readonly overwriteDrift?: boolean } = {},
  ): Promise<WeightChange> {
    const state = this.#state(input);
    requirePercent(percent, "weight");
    if (percent > 0 && (state.phase !== "ready" || !state.candidateVersion)) {
      throw new TargetStateError(
        `cannot send traffic to the candidate in phase ${state.phase}; it must be ready`,
      );
    }
    const alias = await this.#getAlias();
    const observed = this.#observe(state, alias);
    if (observed.drift && !options.overwriteDrift) {
      return {
        outcome: "drift",
        state,
        weights: observed,
        message:
          `alias ${this.#aliasName()} changed outside the rollout: the candidate receives ` +
          `${round(observed.canary)}% instead of ${state.canaryWeight}% (${observed.detail})`,
      };
    }
    const candidate = state.candidateVersion ?? state.stableVersion;
    await this.#updateAlias(alias, weightedAlias(state.stableVersion, candidate, percent));
    const next: LambdaAliasState = { ...state, canaryWeight: percent };
    return appliedWeight(
      next,
      percent,
      describeAlias(weightedAlias(state.stableVersion, candidate, percent)),
    );
  }

  async setHeaderRoute(input: TargetState, route: HeaderRoute): Promise<HeaderRouteChange> {
    const state = this.#state(input);
    const qualified = state.candidateVersion
      ? `${this.#settings.functionName}:${state.candidateVersion}`
      : "the candidate version (once published)";
    return {
      state,
      applied: false,
      message: `a Lambda alias cannot route by header (${route.name}): testers invoke ${qualified} directly`,
    };
  }

  async removeHeaderRoute(input: TargetState, name: string): Promise<HeaderRouteChange> {
    return {
      state: this.#state(input),
      applied: false,
      message: `no header routes on a Lambda alias (${name})`,
    };
  }

  async promote(input: TargetState, _options: PromoteOptions): Promise<TargetState> {
    const state = this.#state(input);
    if (state.phase === "promoted") return state;
    if (state.phase !== "ready" || !state.candidateVersion) {
      throw new TargetStateError(`cannot promote in phase ${state.phase}; the candidate must be ready`);
    }
    const alias = await this.#getAlias();
    await this.#updateAlias(alias, weightedAlias(state.stableVersion, state.candidateVersion, 100));
    const next: LambdaAliasState = {
      type: "lambda-alias",
      phase: "promoted",
      stableVersion: state.candidateVersion,
      previousVersion: state.stableVersion,
      canaryWeight: 0,
    };
    return next;
  }

  async abort(input: TargetState, _options: AbortOptions): Promise<Readiness> {
    const state = this.#state(input);
    if (state.phase === "aborted") return { ready: true, state, message: "already aborted" };
    const back =
      state.phase === "promoted" ? (state.previousVersion ?? state.stableVersion) : state.stableVersion;
    const alias = await this.#getAlias();
    const target = weightedAlias(back, back, 0);
    const routed = Object.keys(alias.RoutingConfig?.AdditionalVersionWeights ?? {}).length > 0;
    if (alias.FunctionVersion !== back || routed) await this.#updateAlias(alias, target);
    const next: LambdaAliasState = {
      type: "lambda-alias",
      phase: "aborted",
      stableVersion: back,
      canaryWeight: 0,
    };
    return {
      ready: true,
      state: next,
      message: `${this.#aliasName()} → version ${back} with no routing config`,
    };
  }

  async scaleDown(input: TargetState): Promise<Readiness> {
    return {
      ready: true,
      state: this.#state(input),
      message: "nothing to scale down: a Lambda version without traffic uses no resources",
    };
  }

  #state(input: unknown): LambdaAliasState {
    return parseTargetState(LambdaAliasStateSchema, input, "lambda-alias");
  }

  #aliasName(): string {
    return `${this.#settings.functionName}:${this.#settings.alias}`;
  }

  async #getAlias(): Promise<AliasConfiguration> {
    try {
      return await this.clients.lambda.send(
        new GetAliasCommand({ FunctionName: this.#settings.functionName, Name: this.#settings.alias }),
      );
    } catch (err) {
      if (awsErrorName(err) === "ResourceNotFoundException") {
        throw new TargetConfigurationError(`alias ${this.#aliasName()} does not exist`, { cause: err });
      }
      throw err;
    }
  }

  async #updateAlias(
    current: AliasConfiguration,
    target: Pick<UpdateAliasRequest, "FunctionVersion" | "RoutingConfig">,
  ): Promise<void> {
    try {
      await this.clients.lambda.send(
        new UpdateAliasCommand({
          FunctionName: this.#settings.functionName,
          Name: this.#settings.alias,
          ...target,
          RevisionId: current.RevisionId,
        }),
      );
    } catch (err) {
      if (awsErrorName(err) === "PreconditionFailedException") {
        throw new AliasChangedError(`alias ${this.#aliasName()} changed since the rollout read it`, {
          cause: err,
        });
      }
      throw err;
    }
  }

  #observe(state: LambdaAliasState, alias: AliasConfiguration): ObservedWeights {
    const primary = alias.FunctionVersion ?? "$LATEST";
    const extra = alias.RoutingConfig?.AdditionalVersionWeights ?? {};
    const extraTotal = Object.values(extra).reduce((a, b) => a + b, 0);
    const share = (version: string | undefined): number => {
      if (version === undefined) return 0;
      return 100 * ((version === primary ? 1 - extraTotal : 0) + (extra[version] ?? 0));
    };
    const canary = state.candidateVersion === state.stableVersion ? 0 : share(state.candidateVersion);
    const stable = share(state.stableVersion);
    const drift = !sharesMatch(canary, stable, state.canaryWeight);
    return {
      canary,
      stable,
      expectedCanary: state.canaryWeight,
      drift,
      detail: describeAlias({ FunctionVersion: primary, RoutingConfig: { AdditionalVersionWeights: extra } }),
    };
  }

  #versionState(
    state: LambdaAliasState,
    versionState: string | undefined,
    reason: string | undefined,
    deadlineAt: number,
  ): Readiness {
    const version = state.candidateVersion ?? "?";
    if (versionState === "Failed" || versionState === "Inactive") {
      throw new TargetNotReadyError(
        `version ${version} of ${this.#settings.functionName} is ${versionState}: ${reason ?? "no reason given"}`,
      );
    }
    if (versionState !== undefined && versionState !== "Active") {
      return this.#notYet(state, deadlineAt, `version ${version} is ${versionState}`);
    }
    const next: LambdaAliasState = { ...state, phase: "ready" };
    return {
      ready: true,
      state: next,
      message: `version ${version} is published and active (${this.#settings.functionName}:${version})`,
    };
  }

  #notYet(state: LambdaAliasState, deadlineAt: number, progress: string): Readiness {
    if (this.clock.now() >= deadlineAt) {
      throw new TargetNotReadyError(
        `${this.#settings.functionName} was not ready before its progress deadline ` +
          `(${new Date(deadlineAt).toISOString()}): ${progress}`,
      );
    }
    return {
      ready: false,
      state,
      retryAfterSeconds: this.#settings.pollSeconds,
      message: `${this.#settings.functionName}: ${progress}`,
    };
  }
}

/**
 * The alias configuration for a share: the stable version with one additional version at
 * `percent / 100`; 0 removes the routing config, 100 points the alias at the candidate with none.
 */
export function weightedAlias(
  stable: string,
  candidate: string,
  percent: number,
): Pick<UpdateAliasRequest, "FunctionVersion" | "RoutingConfig"> {
  if (percent >= 100) return { FunctionVersion: candidate, RoutingConfig: { AdditionalVersionWeights: {} } };
  if (percent <= 0 || candidate === stable) {
    return { FunctionVersion: stable, RoutingConfig: { AdditionalVersionWeights: {} } };
  }
  return {
    FunctionVersion: stable,
    RoutingConfig: { AdditionalVersionWeights: { [candidate]: percent / 100 } },
  };
}

function describeAlias(alias: Pick<UpdateAliasRequest, "FunctionVersion" | "RoutingConfig">): string {
  const extra = Object.entries(alias.RoutingConfig?.AdditionalVersionWeights ?? {});
  return `alias → ${alias.FunctionVersion}${extra.length ? ` + ${extra.map(([v, w]) => `${v}@${w}`).join(", ")}` : ""}`;
}

function round(value: number): string {
  return String(Math.round(value * 100) / 100);
}
