import {
  InvalidToken,
  SendTaskFailureCommand,
  SendTaskSuccessCommand,
  type SFNClient,
  TaskDoesNotExist,
  TaskTimedOut,
} from "@aws-sdk/client-sfn";
import { RolloutsError } from "../../statemachine/errors.ts";

/** Why Step Functions refused a token: the wait it belonged to is over (or never existed). */
export type StaleTokenReason = "TaskTimedOut" | "TaskDoesNotExist" | "InvalidToken";

/** Delivering to a token that is no longer waited on is an expected outcome, not a crash. */
export type TokenDelivery =
  | { delivered: true }
  | { delivered: false; reason: StaleTokenReason; message: string };

/**
 * The task-token port: how the abort channel, `promote` and analysis completion end a
 * `.waitForTaskToken` wait. A token that was already used, timed out or is garbage comes back as
 * `{delivered: false}` with the reason, so callers can tell a person "nothing was waiting"
 * instead of failing.
 */
export interface TaskTokens {
  sendFailure(token: string, error: string, cause: string): Promise<TokenDelivery>;
  sendSuccess(token: string, output: unknown): Promise<TokenDelivery>;
}

/** The call failed for another reason (throttling, permissions): retry it. */
export class TaskTokenError extends RolloutsError {
  override readonly name: string = "TaskTokenError";

  constructor(operation: string, options?: ErrorOptions) {
    const why = options?.cause instanceof Error ? `: ${options.cause.name}: ${options.cause.message}` : "";
    super(`${operation} failed${why}`, options);
  }
}

/** Step Functions caps `error` at 256 and `cause` at 32 768 characters. */
const MAX_ERROR = 256;
const MAX_CAUSE = 32_768;

/** Task tokens on Step Functions (and on the local runtime's façade, through the same client). */
export class SfnTaskTokens implements TaskTokens {
  readonly #client: SFNClient;

  constructor(client: SFNClient) {
    this.#client = client;
  }

  sendFailure(token: string, error: string, cause: string): Promise<TokenDelivery> {
    return this.#deliver("SendTaskFailure", () =>
      this.#client.send(
        new SendTaskFailureCommand({
          taskToken: token,
          error: error.slice(0, MAX_ERROR),
          cause: cause.slice(0, MAX_CAUSE),
        }),
      ),
    );
  }

  sendSuccess(token: string, output: unknown): Promise<TokenDelivery> {
    return this.#deliver("SendTaskSuccess", () =>
      this.#client.send(
        new SendTaskSuccessCommand({ taskToken: token, output: JSON.stringify(output ?? null) }),
      ),
    );
  }

  async #deliver(operation: string, call: () => Promise<unknown>): Promise<TokenDelivery> {
    try {
      await call();
      return { delivered: true };
    } catch (error) {
      const reason = staleReason(error);
      if (reason !== undefined) {
        return { delivered: false, reason, message: (error as Error).message || reason };
      }
      throw new TaskTokenError(operation, { cause: error });
    }
  }
}

function staleReason(error: unknown): StaleTokenReason | undefined {
  if (error instanceof TaskTimedOut) return "TaskTimedOut";
  if (error instanceof TaskDoesNotExist) return "TaskDoesNotExist";
  if (error instanceof InvalidToken) return "InvalidToken";
  const name = (error as Error)?.name;
  return name === "TaskTimedOut" || name === "TaskDoesNotExist" || name === "InvalidToken" ? name : undefined;
}

/** Records deliveries and answers from a set of live tokens: for tests of the abort channel. */
export class RecordingTaskTokens implements TaskTokens {
  readonly live = new Set<string>();
  readonly failures: Array<{ token: string; error: string; cause: string }> = [];
  readonly successes: Array<{ token: string; output: unknown }> = [];

  async sendFailure(token: string, error: string, cause: string): Promise<TokenDelivery> {
    if (!this.live.delete(token))
      return { delivered: false, reason: "TaskDoesNotExist", message: "not waiting" };
    this.failures.push({ token, error, cause });
    return { delivered: true };
  }

  async sendSuccess(token: string, output: unknown): Promise<TokenDelivery> {
    if (!this.live.delete(token))
      return { delivered: false, reason: "TaskDoesNotExist", message: "not waiting" };
    this.successes.push({ token, output });
    return { delivered: true };
  }
}
