import { pushedArtifact } from "../../functions/traffic/artifact.ts";
import type {
  AbortOptions,
  CandidateArtifact,
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
} from "../../functions/traffic/port.ts";

/**
 * A traffic target in memory: it remembers the real weights (so a test can change them behind
 * the rollout's back to cause drift) and every call it received.
 */
export class FakeTraffic implements TrafficTarget {
  /** Any type of the port does: the workflow only stores it in the state. */
  readonly type = "plugin" as const;
  readonly calls: string[] = [];
  /** What is really configured: percent on the candidate. */
  canary = 0;
  stable = "v0";
  candidate: string | undefined;
  /** `abort` answers not ready this many times (the old side is being scaled back up). */
  abortPending = 0;
  /** Tags this target cannot run: `artifactFor` refuses them, as a target without a way to run a push does. */
  cannotRun: string[] = [];

  artifactFor(pushed: Pushed): CandidateArtifact {
    if (pushed.tag !== null && this.cannotRun.includes(pushed.tag)) {
      throw new RangeError(`this target cannot run image tag "${pushed.tag}"`);
    }
    return pushedArtifact(pushed);
  }

  async prepare(): Promise<Prepared> {
    this.calls.push("prepare");
    return {
      state: { type: "plugin", stable: this.stable, expected: this.canary },
      firstRelease: false,
      stable: this.stable,
    };
  }

  async deployCandidate(state: TargetState, artifact: CandidateArtifact): Promise<TargetState> {
    const version = artifact.version ?? "?";
    this.calls.push(`deployCandidate ${version}`);
    this.candidate = version;
    return { ...state, candidate: version };
  }

  async checkReadiness(state: TargetState): Promise<Readiness> {
    this.calls.push("checkReadiness");
    return { ready: true, state, message: "ready" };
  }

  async readWeights(state: TargetState): Promise<ObservedWeights> {
    const expected = Number(state.expected ?? 0);
    return {
      canary: this.canary,
      stable: 100 - this.canary,
      expectedCanary: expected,
      drift: this.canary !== expected,
      detail: `${this.canary}/${100 - this.canary}`,
    };
  }

  async setWeight(
    state: TargetState,
    percent: number,
    options: { readonly overwriteDrift?: boolean } = {},
  ): Promise<WeightChange> {
    this.calls.push(`setWeight ${percent}${options.overwriteDrift ? " overwrite" : ""}`);
    const weights = await this.readWeights(state);
    if (weights.drift && !options.overwriteDrift) {
      return {
        outcome: "drift",
        state,
        weights,
        message: `the candidate receives ${this.canary}% instead of ${weights.expectedCanary}%`,
      };
    }
    this.canary = percent;
    return {
      outcome: "applied",
      state: { ...state, expected: percent },
      weights: await this.readWeights(state),
    };
  }

  async setHeaderRoute(state: TargetState, route: HeaderRoute): Promise<HeaderRouteChange> {
    this.calls.push(`setHeaderRoute ${route.name}`);
    return { state, applied: true, message: `header route ${route.name}` };
  }

  async removeHeaderRoute(state: TargetState, name: string): Promise<HeaderRouteChange> {
    this.calls.push(`removeHeaderRoute ${name}`);
    return { state, applied: true, message: `header route ${name} removed` };
  }

  async promote(state: TargetState, _options: PromoteOptions): Promise<TargetState> {
    this.calls.push("promote");
    this.stable = String(state.candidate ?? this.stable);
    this.candidate = undefined;
    this.canary = 0;
    return { type: "plugin", stable: this.stable, expected: 0, promoted: true };
  }

  async abort(state: TargetState, _options: AbortOptions): Promise<Readiness> {
    this.calls.push("abort");
    if (this.abortPending > 0) {
      this.abortPending--;
      return { ready: false, state, retryAfterSeconds: 15, message: "scaling the old side up" };
    }
    this.canary = 0;
    return { ready: true, state: { ...state, expected: 0 }, message: "back to stable" };
  }

  async scaleDown(state: TargetState): Promise<Readiness> {
    this.calls.push("scaleDown");
    return { ready: true, state, message: "scaled down" };
  }
}
