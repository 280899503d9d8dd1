import { type SFNClient, StartExecutionCommand } from "@aws-sdk/client-sfn";
import { RolloutsError } from "../../statemachine/errors.ts";
import { isAwsError } from "../aws-errors.ts";
import { executionArnFor } from "../timer/ticker.ts";

export interface StartRequest {
  stateMachineArn: string;
  name: string;
  input: unknown;
}

export type StartResult =
  | { status: "started"; executionArn: string }
  /** An execution of that name exists (running or closed): nothing was started. */
  | { status: "already-exists"; executionArn: string };

/** The port the trigger starts executions through. `ExecutionAlreadyExists` is an outcome, not an error. */
export interface Executions {
  start(request: StartRequest): Promise<StartResult>;
}

/** StartExecution failed for another reason (throttling, permissions): the event is retried. */
export class ExecutionStartError extends RolloutsError {
  override readonly name = "ExecutionStartError";

  constructor(name: string, options?: ErrorOptions) {
    const why = options?.cause instanceof Error ? `: ${options.cause.name}: ${options.cause.message}` : "";
    super(`StartExecution ${name} failed${why}`, options);
  }
}

/** Executions on Step Functions (or the local runtime's façade, through the same client). */
export class SfnExecutions implements Executions {
  readonly #client: SFNClient;

  constructor(client: SFNClient) {
    this.#client = client;
  }

  async start(request: StartRequest): Promise<StartResult> {
    try {
      const out = await this.#client.send(
        new StartExecutionCommand({
          stateMachineArn: request.stateMachineArn,
          name: request.name,
          input: JSON.stringify(request.input),
        }),
      );
      return {
        status: "started",
        executionArn: out.executionArn ?? executionArnFor(request.stateMachineArn, request.name),
      };
    } catch (error) {
      if (isAwsError(error, "ExecutionAlreadyExists")) {
        return {
          status: "already-exists",
          executionArn: executionArnFor(request.stateMachineArn, request.name),
        };
      }
      throw new ExecutionStartError(request.name, { cause: error });
    }
  }
}
