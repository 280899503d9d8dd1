import {
  DescribeExecutionCommand,
  GetExecutionHistoryCommand,
  type HistoryEvent,
  type SFNClient,
} from "@aws-sdk/client-sfn";
import type { ExecutionStatus } from "./model.ts";

/**
 * What Step Functions says of one execution, for `rollouts triage`: its status, when it started and
 * stopped, its error and cause, and the state it entered last (the newest events of its history,
 * read backwards). The operating policy grants both calls (`grantOperate`). A call that fails
 * (permissions, an execution older than Step Functions keeps, an endpoint that does not answer)
 * is the reading's `problem`: the report is made from the table alone, and says so.
 */
export interface ExecutionReader {
  read(executionArn: string): Promise<ExecutionStatus>;
}

/** History events read backwards to find the state entered last: the last Task and its few neighbours. */
const HISTORY_EVENTS = 25;

const iso = (date: Date | undefined) => (date === undefined ? null : date.toISOString());

function lastState(events: HistoryEvent[]): ExecutionStatus["lastState"] {
  const entered = events.find((e) => e.stateEnteredEventDetails?.name !== undefined);
  const name = entered?.stateEnteredEventDetails?.name;
  return name === undefined || entered?.timestamp === undefined
    ? null
    : { name, enteredAt: entered.timestamp.toISOString() };
}

const describeError = (error: unknown): string => {
  const e = error as { name?: string; message?: string };
  return e.name && e.name !== "Error" ? `${e.name}: ${e.message}` : String(e.message ?? error);
};

/** Reads through an SDK client: the account's Step Functions, or the embedded runtime's façade. */
export class SfnExecutionReader implements ExecutionReader {
  readonly #client: SFNClient;

  constructor(client: SFNClient) {
    this.#client = client;
  }

  async read(executionArn: string): Promise<ExecutionStatus> {
    try {
      const described = await this.#client.send(new DescribeExecutionCommand({ executionArn }));
      const history = await this.#client.send(
        new GetExecutionHistoryCommand({ executionArn, reverseOrder: true, maxResults: HISTORY_EVENTS }),
      );
      return {
        status: described.status ?? null,
        startedAt: iso(described.startDate),
        stoppedAt: iso(described.stopDate),
        error: described.error ?? null,
        cause: described.cause ?? null,
        lastState: lastState(history.events ?? []),
        problem: null,
      };
    } catch (error) {
      return {
        status: null,
        startedAt: null,
        stoppedAt: null,
        error: null,
        cause: null,
        lastState: null,
        problem: `Step Functions did not say how ${executionArn} stands: ${describeError(error)}`,
      };
    }
  }
}
