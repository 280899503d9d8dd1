import { RecordingTaskTokens } from "../../functions/abort/task-tokens.ts";
import { ManualClock } from "../../functions/clock.ts";
import { RecordingEventPublisher } from "../../functions/events/memory.ts";
import { MemoryRolloutStore } from "../../functions/store/memory.ts";
import { newRolloutItem, type RolloutItem } from "../../functions/store/schema.ts";
import { InProcessTimer } from "../../functions/timer/in-process.ts";
import { TimerFiringSchema } from "../../functions/timer/port.ts";
import type { PromoteOptions, Readiness, TargetState, WeightChange } from "../../functions/traffic/port.ts";
import { begin } from "../../functions/workflow/begin.ts";
import type { WorkflowDeps } from "../../functions/workflow/deps.ts";
import { RecordingMetricsSink } from "../../functions/workflow/metrics.ts";
import { ResumePayloadSchema, type WorkflowContext } from "../../functions/workflow/payloads.ts";
import { resume } from "../../functions/workflow/resume.ts";
import { FakeTraffic } from "./traffic.ts";

/**
 * The workflow's functions driven directly over the in-memory adapters, one call at a time, as
 * the state machine would call them: for tests of what a single handler (or a Timer firing) does
 * when it is retried, or when it runs late.
 */

export const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);
export const NAME = "checkout";
const SM = "arn:aws:states:us-east-1:123456789012:stateMachine:checkout-rollout";
export const execArn = (name: string) => `${SM.replace(":stateMachine:", ":execution:")}:${name}`;
export const digestOf = (n: number) => `sha256:${String(n).repeat(64).slice(0, 64)}`;
export const TARGET = { type: "fake" };
export const ROLLOUT = { name: NAME, revision: "abc", strategy: "canary" as const, stepCount: 3 };

/**
 * `FakeTraffic` as the direct driver's tests read it: a `setWeight` that can crash once before or
 * after changing the weight, readiness not recorded, and each scale-down naming its version.
 */
export class MemoryTarget extends FakeTraffic {
  /** Throws once from `setWeight`: before changing anything, or after (a crash after the change). */
  failSetWeight: "before" | "after" | undefined;

  #fail(when: "before" | "after"): void {
    if (this.failSetWeight === when) {
      this.failSetWeight = undefined;
      throw new Error(`setWeight crashed ${when} changing the weight`);
    }
  }

  override async checkReadiness(state: TargetState): Promise<Readiness> {
    return { ready: true, state, message: "ready" };
  }

  override async setWeight(state: TargetState, percent: number, options: { overwriteDrift?: boolean } = {}) {
    this.calls.push(`setWeight ${percent}`);
    this.#fail("before");
    const weights = await this.readWeights(state);
    if (weights.drift && !options.overwriteDrift) {
      return { outcome: "drift", state, weights, message: "drift" } satisfies WeightChange;
    }
    this.canary = percent;
    this.#fail("after");
    return { outcome: "applied", state: { ...state, expected: percent }, weights } satisfies WeightChange;
  }

  override async promote(state: TargetState, options: PromoteOptions): Promise<TargetState> {
    return { ...(await super.promote(state, options)), promoted: String(state.candidate) };
  }

  override async scaleDown(state: TargetState): Promise<Readiness> {
    this.calls.push(`scaleDown ${String(state.candidate ?? state.promoted ?? "?")}`);
    return { ready: true, state, message: "scaled down" };
  }
}

/**
 * Faults to inject once into the ports, as a Lambda sees them: the call fails before it had any
 * effect (`before`), or after it had it and only the answer was lost (`after`).
 */
export interface Faults {
  publish?: "before" | "after";
  schedule?: "before" | "after";
}

export interface Direct {
  faults: Faults;
  deps: WorkflowDeps;
  store: MemoryRolloutStore;
  clock: ManualClock;
  tokens: RecordingTaskTokens;
  timer: InProcessTimer;
  events: RecordingEventPublisher;
  target: MemoryTarget;
  /** What each Timer firing's `resume` returned, in order. */
  resumed: string[];
}

export function direct(): Direct {
  const clock = new ManualClock(T0);
  const store = new MemoryRolloutStore({ clock });
  const tokens = new RecordingTaskTokens();
  const timer = new InProcessTimer({ clock });
  const events = new RecordingEventPublisher();
  const target = new MemoryTarget();
  const resumed: string[] = [];
  const faults: Faults = {};
  const once = async <T>(kind: keyof Faults, run: () => Promise<T>): Promise<T> => {
    const when = faults[kind];
    if (when === undefined) return run();
    delete faults[kind];
    if (when === "before") throw new Error(`${kind} failed`);
    await run();
    throw new Error(`${kind} answer lost`);
  };
  const deps: WorkflowDeps = {
    store,
    tokens,
    timer: {
      schedule: (request) => once("schedule", () => timer.schedule(request)),
      cancel: (key) => timer.cancel(key),
    },
    events: { publish: (list) => once("publish", () => events.publish(list)) },
    clock,
    targetFor: () => target,
    providers: { measure: async () => ({ ok: true, result: [1], value: "[1]" }) },
    metrics: new RecordingMetricsSink(),
  };
  timer.setHandler(async (raw) => {
    const firing = TimerFiringSchema.parse(raw);
    resumed.push(await resume(deps, ResumePayloadSchema.parse(firing.payload), firing.key));
  });
  return { faults, deps, store, clock, tokens, timer, events, target, resumed };
}

/** Records a push as the trigger does and runs Begin for it: the execution of revision `n`. */
export async function startRevision(d: Direct, n: number): Promise<WorkflowContext> {
  const digest = digestOf(n);
  const executionName = `${NAME}-${digest.slice(7, 19)}-g${n}`;
  const image = `123456789012.dkr.ecr.us-east-1.amazonaws.com/checkout@${digest}`;
  const now = d.clock.now();
  const trigger = {
    repository: "checkout",
    digest,
    tag: `v${n}`,
    image,
    eventId: `event-${n}`,
    eventTime: now,
    generation: n,
    executionName,
    acceptedAt: now,
  };
  const existing = await d.store.get(NAME);
  if (existing) await d.store.save({ ...existing, trigger }, existing.version);
  else await d.store.save({ ...newRolloutItem(NAME, now), trigger }, null);
  const { context } = await begin(d.deps, {
    input: {
      rollout: NAME,
      revision: { repository: "checkout", image, digest, tag: `v${n}` },
      trigger: { eventId: trigger.eventId, eventTime: now, generation: n, executionName },
    },
    executionId: execArn(executionName),
    rollout: ROLLOUT,
    stepLabels: [],
    target: TARGET,
  });
  return context;
}

export async function itemOf(d: Direct): Promise<RolloutItem> {
  const item = await d.store.get(NAME);
  if (!item) throw new Error("no rollout item");
  return item;
}

/** Calls `run` until it stops throwing (a Lambda retried by Step Functions); returns the attempts. */
export async function retried<T>(run: () => Promise<T>, attempts = 5): Promise<T> {
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      return await run();
    } catch (error) {
      last = error;
    }
  }
  throw last;
}
