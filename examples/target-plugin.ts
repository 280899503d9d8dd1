// A target plugin: a router with two upstreams and a weight behind an HTTP API of its own,
// served as a Lambda function (docs/traffic.md, "Target plugins").
import { servePlugin, TargetConfigurationError, type TargetPlugin } from "sfn-rollouts/plugin";

/** What the plugin remembers between calls: the workflow stores it. */
interface State {
  stable: string;
  candidate?: string;
  weight: number;
}

/** A router with two upstreams and a weight, behind an HTTP API of its own (here: `api`). */
function meshTarget(config: { api: string }): TargetPlugin<State> {
  const put = (body: object) =>
    fetch(`${config.api}/routes/checkout`, { method: "PUT", body: JSON.stringify(body) });
  const weights = (state: State) => ({
    canary: state.weight,
    stable: 100 - state.weight,
    expectedCanary: state.weight,
    drift: false,
    detail: `${state.stable} / ${state.candidate ?? "none"}`,
  });
  return {
    async prepare() {
      const route = (await (await fetch(`${config.api}/routes/checkout`)).json()) as { stable: string };
      return { state: { stable: route.stable, weight: 0 }, firstRelease: false, stable: route.stable };
    },
    async deployCandidate(state, artifact) {
      if (!("image" in artifact)) throw new TargetConfigurationError("the mesh runs images");
      await put({ stable: state.stable, candidate: artifact.image, weight: 0 });
      return { ...state, candidate: artifact.image };
    },
    checkReadiness: (state) => ({ ready: true, state, message: "the mesh routes at once" }),
    readWeights: (state) => weights(state),
    async setWeight(state, percent) {
      await put({ stable: state.stable, candidate: state.candidate, weight: percent });
      const next = { ...state, weight: percent };
      return { outcome: "applied", state: next, weights: weights(next) };
    },
    setHeaderRoute: (state) => ({ state, applied: false, message: "no header routes" }),
    removeHeaderRoute: (state) => ({ state, applied: false, message: "no header routes" }),
    async promote(state) {
      await put({ stable: state.candidate, weight: 0 });
      return { stable: state.candidate ?? state.stable, weight: 0 };
    },
    async abort(state) {
      await put({ stable: state.stable, weight: 0 });
      return { ready: true, state: { stable: state.stable, weight: 0 }, message: "back on stable" };
    },
    scaleDown: (state) => ({ ready: true, state, message: "nothing to scale down" }),
  };
}

export const handler = servePlugin((config) => meshTarget(config as { api: string }));
