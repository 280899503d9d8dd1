/**
 * One history event, in the shape `GetExecutionHistory` returns (the façade only turns the
 * timestamp into epoch seconds). The runtime records these itself, on its own clock, so tests and
 * the bench can count state transitions and history events per rollout as on AWS.
 */
export interface HistoryEvent {
  id: number;
  previousEventId: number;
  /** Epoch ms on the runtime's clock. */
  timestamp: number;
  type: string;
  [details: `${string}EventDetails`]: Record<string, unknown> | undefined;
}

/** Lowercases the first letter: `TaskScheduled` → `taskScheduled`. */
function camel(type: string): string {
  return type.charAt(0).toLowerCase() + type.slice(1);
}

/** Where an event's details go: the AWS field names (`stateEnteredEventDetails` for any `*StateEntered`). */
function detailsKey(type: string): `${string}EventDetails` {
  if (type.endsWith("StateEntered")) return "stateEnteredEventDetails";
  if (type.endsWith("StateExited")) return "stateExitedEventDetails";
  return `${camel(type)}EventDetails`;
}

/** The ordered history of one execution. */
export class ExecutionHistory {
  readonly events: HistoryEvent[] = [];

  /** Appends an event; `previousEventId` is the event before it, as AWS numbers them. */
  record(type: string, timestamp: number, details?: Record<string, unknown>): HistoryEvent {
    const id = this.events.length + 1;
    const event: HistoryEvent = { id, previousEventId: id - 1, timestamp, type };
    if (details !== undefined) event[detailsKey(type)] = details;
    this.events.push(event);
    return event;
  }

  /** State transitions: the `*StateEntered` events, what Step Functions bills. */
  get stateTransitions(): number {
    return this.events.filter((event) => event.type.endsWith("StateEntered")).length;
  }
}
