import type { z } from "zod";
import { RolloutsError } from "../../statemachine/errors.ts";
import { formatIssues } from "../../statemachine/problems.ts";
import { logged } from "../observability/logging.ts";
import type { WorkflowDeps } from "../workflow/deps.ts";

/** A Task payload that does not match its schema: a wiring fault, named so it is not retried blindly. */
export class InvalidPayloadError extends RolloutsError {
  override readonly name = "InvalidPayloadError";
}

/** Parses a handler's input, with every problem and its field path in one message. */
export function parsePayload<T>(schema: z.ZodType<T>, event: unknown, handler: string): T {
  const result = schema.safeParse(event);
  if (result.success) return result.data;
  throw new InvalidPayloadError(`${handler}: invalid payload: ${formatIssues(result.error, "(payload)")}`);
}

export type Handler<R> = (event: unknown) => Promise<R>;

/**
 * A Lambda handler from a workflow function: parse the input with zod, call the domain, return
 * plain JSON, every log line keyed by rollout, execution, step and revision (`logged`). `deps` is
 * called per invocation so the composition root builds adapters lazily.
 */
export function workflowHandler<T, R>(
  name: string,
  schema: z.ZodType<T>,
  run: (deps: WorkflowDeps, input: T) => Promise<R>,
): (deps: () => WorkflowDeps) => Handler<R> {
  return (deps) => logged(name, async (event) => run(deps(), parsePayload(schema, event, name)));
}
