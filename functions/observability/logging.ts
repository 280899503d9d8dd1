import { Logger } from "@aws-lambda-powertools/logger";

/** Every line a handler logs carries these keys (null when the invocation has none). */
export const LOG_KEYS = ["rollout", "execution", "step", "revision"] as const;
export type LogKey = (typeof LOG_KEYS)[number];
export type LogKeys = Record<LogKey, string | number | null>;

/** The `service` of every line, and of the traces. */
export const SERVICE_NAME = "sfn-rollouts";

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : undefined;
const str = (v: unknown): string | undefined => (typeof v === "string" && v.length > 0 ? v : undefined);
const int = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isInteger(v) ? v : undefined;

/**
 * The log keys of an invocation, read from its raw event whatever its shape: a workflow Task's
 * payload (`context`, `rollout`, `stepIndex`), a Timer firing (`payload`), an ECR push (no
 * rollout yet: the trigger decides). Read before the payload is validated, so a line about an
 * invalid payload still says which rollout it came from when it can.
 */
export function logKeysOf(event: unknown): LogKeys {
  const e = obj(event) ?? {};
  const context = obj(e.context);
  const firing = obj(e.payload);
  const input = obj(e.input);
  const ref = obj(e.rollout);
  return {
    rollout:
      str(context?.rollout) ??
      str(ref?.name) ??
      str(e.rollout) ??
      str(firing?.rollout) ??
      str(input?.rollout) ??
      null,
    execution:
      str(context?.executionArn) ??
      str(e.executionId) ??
      str(e.executionArn) ??
      str(firing?.executionArn) ??
      null,
    step: int(e.stepIndex) ?? int(firing?.stepIndex) ?? null,
    revision: int(context?.revision) ?? int(e.revision) ?? int(firing?.revision) ?? null,
  };
}

/**
 * True in AWS Lambda, whose runtime sets `AWS_EXECUTION_ENV` to `AWS_Lambda_…`; the embedded
 * runtime and the tests run the handlers in-process, without it.
 */
export function inLambda(source: NodeJS.ProcessEnv): boolean {
  return (source.AWS_EXECUTION_ENV ?? "").startsWith("AWS_Lambda_");
}

/**
 * The level: `POWERTOOLS_LOG_LEVEL` when set on the function; else INFO in a Lambda and SILENT
 * elsewhere, so the embedded runtime, the demo and the tests print nothing unless asked.
 */
function logLevel(source: NodeJS.ProcessEnv): string {
  return source.POWERTOOLS_LOG_LEVEL ?? (inLambda(source) ? "INFO" : "SILENT");
}

let base: Logger | undefined;

/** The process' logger, built on first use (its level read from the environment then). */
export function rootLogger(source: NodeJS.ProcessEnv = process.env): Logger {
  base ??= new Logger({ serviceName: SERVICE_NAME, logLevel: logLevel(source) as never });
  return base;
}

/**
 * Wraps a handler so every line of its invocation is keyed: a child logger per invocation (the
 * embedded runtime runs invocations concurrently in one process) with the keys of its event, a
 * line when it starts, and one when it ends or fails (with the error), its duration in ms.
 */
export function logged<R>(
  name: string,
  handler: (event: unknown, log: Logger) => Promise<R>,
  logger: () => Logger = () => rootLogger(),
): (event: unknown) => Promise<R> {
  return async (event) => {
    const log = logger().createChild();
    log.appendKeys({ handler: name, ...logKeysOf(event) });
    const started = Date.now();
    log.debug("invoked", { event: event as never });
    try {
      const result = await handler(event, log);
      log.info("done", { durationMs: Date.now() - started });
      return result;
    } catch (error) {
      log.error("failed", { durationMs: Date.now() - started, error: error as Error });
      throw error;
    }
  };
}
