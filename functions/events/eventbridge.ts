import {
  type EventBridgeClient,
  PutEventsCommand,
  type PutEventsCommandOutput,
  type PutEventsRequestEntry,
} from "@aws-sdk/client-eventbridge";
import { EVENT_SOURCE, EventPublishError, type EventPublisher, type LifecycleEvent } from "./port.ts";

export interface EventBridgePublisherOptions {
  client: EventBridgeClient;
  /** Name or ARN of the bus; default: the account's default bus. */
  eventBusName?: string;
  /** ARNs to list in `resources` (e.g. the state machine), so rules can filter on them. */
  resources?: string[];
}

/** PutEvents takes at most 10 entries per call. */
const BATCH = 10;
/** Ids of events this publisher delivered, remembered (newest) to drop a retry's repeat. */
const REMEMBERED = 1_000;

/**
 * Publishes lifecycle events with `PutEvents`. PutEvents reports per-entry failures in a
 * successful response (`FailedEntryCount`), which the SDK does not turn into an error: this
 * adapter does, as `EventPublishError`, so a lost notification is a visible, retryable Lambda
 * error rather than silence.
 *
 * EventBridge does not deduplicate. Every workflow event carries a deterministic `detail.id`;
 * this publisher drops an event whose id it delivered before (within its Lambda container: a
 * retry that lands elsewhere repeats it with the same id, which consumers can deduplicate on), and
 * sends an id at most once per call.
 */
export class EventBridgePublisher implements EventPublisher {
  readonly #options: EventBridgePublisherOptions;
  readonly #delivered = new Set<string>();

  constructor(options: EventBridgePublisherOptions) {
    this.#options = options;
  }

  async publish(events: LifecycleEvent | readonly LifecycleEvent[]): Promise<void> {
    const given: readonly LifecycleEvent[] = Array.isArray(events) ? events : [events as LifecycleEvent];
    const ids = new Set<string>();
    const list = given.filter((event) => {
      const id = event.detail.id;
      if (id === undefined) return true;
      if (this.#delivered.has(id) || ids.has(id)) return false;
      ids.add(id);
      return true;
    });
    const failures: string[] = [];
    for (let i = 0; i < list.length; i += BATCH) {
      const batch = list.slice(i, i + BATCH);
      const entries: PutEventsRequestEntry[] = batch.map((event) => ({
        Source: EVENT_SOURCE,
        DetailType: event.type,
        Detail: JSON.stringify(event.detail),
        Time: new Date(event.detail.at),
        ...(this.#options.eventBusName === undefined ? {} : { EventBusName: this.#options.eventBusName }),
        ...(this.#options.resources === undefined ? {} : { Resources: this.#options.resources }),
      }));
      let out: PutEventsCommandOutput;
      try {
        out = await this.#options.client.send(new PutEventsCommand({ Entries: entries }));
      } catch (error) {
        throw new EventPublishError(
          batch.map((event) => `${event.type}: ${(error as Error)?.name ?? "Error"}`),
          { cause: error },
        );
      }
      if ((out.FailedEntryCount ?? 0) > 0) {
        (out.Entries ?? []).forEach((entry, index) => {
          if (entry.ErrorCode !== undefined) {
            failures.push(
              `${batch[index]?.type ?? "?"}: ${entry.ErrorCode} ${entry.ErrorMessage ?? ""}`.trim(),
            );
          }
        });
        if (failures.length === 0)
          failures.push(`${out.FailedEntryCount} entries failed without an error code`);
      }
    }
    if (failures.length > 0) throw new EventPublishError(failures);
    for (const id of ids) this.#remember(id);
  }

  #remember(id: string): void {
    this.#delivered.add(id);
    if (this.#delivered.size > REMEMBERED) {
      const oldest = this.#delivered.values().next().value;
      if (oldest !== undefined) this.#delivered.delete(oldest);
    }
  }
}
