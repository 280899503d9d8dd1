import type { LambdaHandler } from "../../local/aws/lambda.ts";
import type { RolloutSpecInput, Step } from "../../statemachine/spec.ts";
import { type EmbeddedRollout, type RolloutFunction, startEmbeddedRollout } from "./embedded-rollout.ts";
import { ScriptedProvider } from "./metrics.ts";
import { canarySpec } from "./rollout-spec.ts";
import { FakeTraffic } from "./traffic.ts";

/** An image digest made of one digit: `digest(2)` is `sha256:2222…`. */
export const digest = (n: number) => `sha256:${String(n).repeat(64).slice(0, 64)}`;

/** A compiled rollout in the embedded runtime over a router in memory and scripted metrics. */
export interface FakeRollout extends EmbeddedRollout {
  router: FakeTraffic;
  provider: ScriptedProvider;
}

export interface FakeRolloutOptions {
  /** The canary's steps; default `CANARY_STEPS`. */
  steps?: Step[];
  /** Other fields of the spec (`onFailure`, `backgroundAnalysis`, …). */
  spec?: Partial<RolloutSpecInput>;
  /** Each metric's answers (numbers, or `"E"` for a failed query), then 1. */
  scripts?: Record<string, Array<number | "E">>;
  wrap?: (name: RolloutFunction, handler: LambdaHandler) => LambdaHandler;
  /** How Timer firings reach resume (`EmbeddedRolloutOptions.delivery`). */
  delivery?: "once" | "async";
  /** The target settings the Tasks carry (the fake router serves them all); default `FAKE_TARGET`. */
  target?: Record<string, unknown>;
}

/** `checkout` with `FakeTraffic` and `ScriptedProvider` behind it, nothing pushed yet. */
export async function startFakeRollout(options: FakeRolloutOptions = {}): Promise<FakeRollout> {
  const router = new FakeTraffic();
  const provider = new ScriptedProvider(options.scripts ?? {});
  const rollout = await startEmbeddedRollout({
    spec: canarySpec(options.steps, options.spec),
    router,
    providers: provider,
    ...(options.wrap ? { wrap: options.wrap } : {}),
    ...(options.delivery ? { delivery: options.delivery } : {}),
    ...(options.target ? { target: options.target } : {}),
  });
  return Object.assign(rollout, { router, provider });
}

/**
 * `checkout` with revision 1 (`v1`) pushed, promoted and its old side scaled down, and the
 * records of that cleared: the next push runs the steps.
 */
export async function startStableRollout(options: FakeRolloutOptions = {}): Promise<FakeRollout> {
  const w = await startFakeRollout(options);
  const ending = await w.rollOut({ digest: digest(1), tag: "v1" });
  if (ending.state !== "Healthy")
    throw new Error(`revision 1 did not become stable: ${JSON.stringify(ending)}`);
  await w.idle();
  w.router.calls.length = 0;
  w.events.published.length = 0;
  w.metrics.points.length = 0;
  w.resumed.length = 0;
  return w;
}
