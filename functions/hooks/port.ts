import { RolloutsError } from "../../statemachine/errors.ts";
/**
 * The hook port: how the workflow hands a lifecycle hook its task. The hook function is invoked
 * asynchronously (it may run a long test) and answers the task token itself.
 */
export interface HookInvoker {
  /** Starts the function with `payload`; resolves once the invocation is accepted. */
  invoke(functionArn: string, payload: unknown): Promise<void>;
}

/** The hook function could not be started (missing, denied, throttled past the SDK's retries). */
export class HookInvokeError extends RolloutsError {
  override readonly name = "HookInvokeFailed";
}
