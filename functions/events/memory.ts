import type { EventPublisher, LifecycleEvent, LifecycleEventType } from "./port.ts";

/**
 * Keeps what was published, for tests and for the local runtime's event log. An event whose id
 * (`detail.id`) was already published is the same announcement repeated by a retry: it is kept once.
 */
export class RecordingEventPublisher implements EventPublisher {
  readonly published: LifecycleEvent[] = [];

  async publish(events: LifecycleEvent | readonly LifecycleEvent[]): Promise<void> {
    const list: readonly LifecycleEvent[] = Array.isArray(events) ? events : [events as LifecycleEvent];
    for (const event of list) {
      const id = event.detail.id;
      if (id !== undefined && this.published.some((e) => e.detail.id === id)) continue;
      this.published.push(structuredClone(event));
    }
  }

  ofType(type: LifecycleEventType): LifecycleEvent[] {
    return this.published.filter((event) => event.type === type);
  }

  types(): LifecycleEventType[] {
    return this.published.map((event) => event.type);
  }
}
