import type { TaskTokens } from "../abort/task-tokens.ts";
import type { AlarmReader } from "../alarms/port.ts";
import type { Clock } from "../clock.ts";
import type { EventPublisher } from "../events/port.ts";
import type { HookInvoker } from "../hooks/port.ts";
import type { MetricProvider } from "../metrics/port.ts";
import type { ModelRegistry } from "../registry/port.ts";
import type { RegistrySettings } from "../registry/settings.ts";
import type { RolloutStore } from "../store/port.ts";
import type { Timer } from "../timer/port.ts";
import type { TrafficTarget } from "../traffic/port.ts";
import type { MetricsSink } from "./metrics.ts";

/**
 * Everything the workflow's steps talk to, as ports. A composition root builds the adapters once
 * per cold start (`functions/handlers/root.ts`); tests and the embedded runtime build their own.
 */
export interface WorkflowDeps {
  store: RolloutStore;
  tokens: TaskTokens;
  timer: Timer;
  events: EventPublisher;
  clock: Clock;
  /** The traffic target for the settings a Task carries. */
  targetFor(settings: unknown): TrafficTarget;
  providers: MetricProvider;
  metrics: MetricsSink;
  /** CloudWatch alarms, read at each step boundary of a rollout that watches some. */
  alarms?: AlarmReader;
  /** Lifecycle hooks' functions, started with their task token. */
  hooks?: HookInvoker;
  /** The model registry a target's settings name (`registryOf`); absent: no registry can be reached. */
  registryFor?(settings: RegistrySettings): ModelRegistry;
}
