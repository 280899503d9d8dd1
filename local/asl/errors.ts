import { RolloutsError } from "../../statemachine/errors.ts";
/**
 * The error a Task state fails with, shaped for `aws-local-stepfunctions`: it matches `Retry` and
 * `Catch` on `name` and hands `message` on as the `Cause`. So `name` is the ASL `Error` (e.g.
 * `RolloutAborted`, `States.Timeout`) and `message` is the `Cause` string, exactly as Step
 * Functions would put them in `$.error`.
 */
export class TaskFailure extends RolloutsError {
  override readonly name: string;

  constructor(error: string, cause: string) {
    super(cause);
    this.name = error;
  }
}

/** The error payload a Lambda function returns when its handler throws (`FunctionError: Unhandled`). */
export interface LambdaErrorPayload {
  errorType: string;
  errorMessage: string;
  trace: string[];
}

/** What Lambda reports for an error thrown by a handler: `errorType` is the error's `name`. */
export function lambdaErrorPayload(thrown: unknown): LambdaErrorPayload {
  if (thrown instanceof Error) {
    return {
      errorType: thrown.name || "Error",
      errorMessage: thrown.message,
      trace: (thrown.stack ?? "").split("\n"),
    };
  }
  return {
    errorType: typeof thrown === "string" ? "string" : "Error",
    errorMessage: String(thrown),
    trace: [],
  };
}

/**
 * A failed `lambda:invoke` as a Task failure: `Error` is the function's `errorType` (so `Catch`
 * on `RolloutAborted` or `Retry` on `Lambda.ServiceException` match) and `Cause` the JSON of the
 * error payload, as Step Functions reports it.
 */
export function lambdaTaskFailure(payload: LambdaErrorPayload): TaskFailure {
  return new TaskFailure(payload.errorType, JSON.stringify(payload));
}
