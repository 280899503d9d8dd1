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

/**
 * Publishes lifecycle events with `PutEvents`. PutEvents reports per-entry failures in a
 * successful response (`FailedEntryCount`), which the SDK does not turn into an error: this
 * adapter does, as `EventPublishError`, so a lost notification is a visible, retryable Lambda
 * error rather than silence.
 */
export class EventBridgePublisher implements EventPublisher {
  readonly #options: EventBridgePublisherOptions;

  constructor(options: EventBridgePublisherOptions) {
    this.#options = options;
  }

  async publish(events: LifecycleEvent | readonly LifecycleEvent[]): Promise<void> {
    const list: readonly LifecycleEvent[] = Array.isArray(events) ? events : [events as LifecycleEvent];
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
  }
}
