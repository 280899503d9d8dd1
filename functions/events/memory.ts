import type { EventPublisher, LifecycleEvent, LifecycleEventType } from "./port.ts";

/** Keeps what was published, for tests and for the local runtime's event log. */
export class RecordingEventPublisher implements EventPublisher {
  readonly published: LifecycleEvent[] = [];

  async publish(events: LifecycleEvent | readonly LifecycleEvent[]): Promise<void> {
    const list: readonly LifecycleEvent[] = Array.isArray(events) ? events : [events as LifecycleEvent];
    this.published.push(...list.map((event) => structuredClone(event)));
  }

  ofType(type: LifecycleEventType): LifecycleEvent[] {
    return this.published.filter((event) => event.type === type);
  }

  types(): LifecycleEventType[] {
    return this.published.map((event) => event.type);
  }
}
