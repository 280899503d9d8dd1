import { randomUUID } from "node:crypto";
import type { Writable } from "node:stream";
import type { StreamingHandler } from "../../functions/handlers/router.ts";
import { Activity } from "../asl/activity.ts";
import type { InvokeOutcome } from "../asl/engine.ts";
import { lambdaErrorPayload } from "../asl/errors.ts";
import { localFunctionArn } from "../asl/intrinsics.ts";
import { withEnv } from "./scoped-env.ts";

/** The Lambda context object handed to in-process handlers (the fields handlers actually read). */
export interface LambdaContext {
  functionName: string;
  functionVersion: string;
  invokedFunctionArn: string;
  memoryLimitInMB: string;
  awsRequestId: string;
  logGroupName: string;
  logStreamName: string;
  callbackWaitsForEmptyEventLoop: boolean;
  getRemainingTimeInMillis(): number;
}

/** A Lambda handler as the project's `functions/handlers/*.ts` export it. */
export type LambdaHandler = (event: unknown, context: LambdaContext) => Promise<unknown> | unknown;

/**
 * How Lambda's Node.js runtime marks a handler wrapped by `awslambda.streamifyResponse`: such a
 * handler is called with `(event, responseStream, context)` and is the only kind a
 * `RESPONSE_STREAM` Function URL invokes.
 */
const STREAMING = Symbol.for("aws.lambda.runtime.handler.streaming");

/** A response-streaming handler, marked as `awslambda.streamifyResponse` marks it, as a function's code. */
export function streamingHandler(handler: StreamingHandler): LambdaHandler {
  return Object.assign(handler, { [STREAMING]: "response" }) as unknown as LambdaHandler;
}

function isStreaming(handler: LambdaHandler): handler is LambdaHandler & StreamingHandler {
  return (handler as unknown as Record<symbol, unknown>)[STREAMING] === "response";
}

/** One function of the local Lambda service. */
export interface LocalFunction {
  name: string;
  arn?: string;
  /** The function's own environment (the template's `Environment.Variables` plus the runtime's). */
  env: Record<string, string>;
  /**
   * How to get the handler, called once (the "cold start") inside the function's environment, so
   * module-level code that reads `process.env` sees this function's values. Receives the
   * environment too, for handler factories that take it explicitly instead of reading the global.
   */
  load: (env: Readonly<Record<string, string>>) => LambdaHandler | Promise<LambdaHandler>;
  timeoutSeconds?: number;
}

interface Registered {
  fn: LocalFunction;
  arn: string;
  handler: Promise<LambdaHandler> | undefined;
}

/**
 * The Lambda service of the embedded runtime: functions registered by name and ARN, invoked
 * in-process with their own environment (see `scoped-env.ts`), results and errors serialised
 * through JSON as the real service does, and errors reported in Lambda's
 * `{errorType, errorMessage, trace}` shape.
 */
export class LocalLambda {
  readonly #functions = new Map<string, Registered>();
  readonly #activity: Activity;

  constructor(options: { activity?: Activity } = {}) {
    this.#activity = options.activity ?? new Activity();
  }

  register(fn: LocalFunction): string {
    const arn = fn.arn ?? localFunctionArn(fn.name);
    const registered: Registered = { fn, arn, handler: undefined };
    this.#functions.set(fn.name, registered);
    this.#functions.set(arn, registered);
    return arn;
  }

  list(): Array<{ name: string; arn: string }> {
    const seen = new Set<Registered>();
    for (const registered of this.#functions.values()) seen.add(registered);
    return [...seen].map((r) => ({ name: r.fn.name, arn: r.arn }));
  }

  has(nameOrArn: string): boolean {
    return this.#find(nameOrArn) !== undefined;
  }

  /** Invokes a function with a JSON event; never throws for a handler error (it is the outcome). */
  invoke(nameOrArn: string, event: unknown): Promise<InvokeOutcome> {
    return this.#activity.track(() => this.#invoke(nameOrArn, event));
  }

  /**
   * Invokes a response-streaming function (a Function URL in `RESPONSE_STREAM` mode does) with the
   * stream it writes its answer to; resolves when the invocation returns, which may be after the
   * stream ended. Throws when the function is unknown, its code cannot load, it is not a
   * streaming handler (naming it), or the handler throws.
   */
  invokeStream(nameOrArn: string, event: unknown, responseStream: Writable): Promise<void> {
    return this.#activity.track(async () => {
      const registered = this.#find(nameOrArn);
      if (registered === undefined) throw new Error(`Function not found: ${nameOrArn}`);
      const { env, context } = this.#context(registered);
      await withEnv(env, async () => {
        const handler = await this.#handler(registered, env);
        if (!isStreaming(handler)) {
          throw new Error(
            `function ${registered.fn.name} is not a response-streaming handler (awslambda.streamifyResponse): a RESPONSE_STREAM Function URL cannot invoke it`,
          );
        }
        await handler(event as Parameters<StreamingHandler>[0], responseStream, context);
      });
    });
  }

  async #handler(registered: Registered, env: Readonly<Record<string, string>>): Promise<LambdaHandler> {
    registered.handler ??= Promise.resolve(registered.fn.load(env));
    return registered.handler.catch((error: unknown) => {
      registered.handler = undefined;
      throw error;
    });
  }

  /** The function's environment and a fresh context for one invocation. */
  #context(registered: Registered): { env: Record<string, string>; context: LambdaContext } {
    const { fn } = registered;
    const env = {
      AWS_LAMBDA_FUNCTION_NAME: fn.name,
      AWS_LAMBDA_FUNCTION_VERSION: "$LATEST",
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: "128",
      ...fn.env,
    };
    const requestId = randomUUID();
    const deadline = Date.now() + (fn.timeoutSeconds ?? 900) * 1000;
    const context: LambdaContext = {
      functionName: fn.name,
      functionVersion: "$LATEST",
      invokedFunctionArn: registered.arn,
      memoryLimitInMB: "128",
      awsRequestId: requestId,
      logGroupName: `/aws/lambda/${fn.name}`,
      logStreamName: `local/${requestId}`,
      callbackWaitsForEmptyEventLoop: false,
      getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    };
    return { env, context };
  }

  async #invoke(nameOrArn: string, event: unknown): Promise<InvokeOutcome> {
    const registered = this.#find(nameOrArn);
    if (registered === undefined) {
      return {
        ok: false,
        error: {
          errorType: "Lambda.ResourceNotFoundException",
          errorMessage: `Function not found: ${nameOrArn}`,
          trace: [],
        },
      };
    }
    const { env, context } = this.#context(registered);
    const serialisedEvent = JSON.parse(JSON.stringify(event ?? null)) as unknown;
    return withEnv(env, async (): Promise<InvokeOutcome> => {
      try {
        const handler = await this.#handler(registered, env);
        const result = await handler(serialisedEvent, context);
        return {
          ok: true,
          payload: result === undefined ? null : (JSON.parse(JSON.stringify(result)) as unknown),
        };
      } catch (error) {
        return { ok: false, error: lambdaErrorPayload(error) };
      }
    });
  }

  #find(nameOrArn: string): Registered | undefined {
    const direct = this.#functions.get(nameOrArn);
    if (direct !== undefined) return direct;
    // `function:name:qualifier` and partial ARNs (`account:function:name`).
    const match = /(?:^|:)function:([^:]+)(?::[^:]+)?$/.exec(nameOrArn);
    if (match?.[1] !== undefined) return this.#functions.get(match[1]);
    const qualified = /^([^:]+):[^:]+$/.exec(nameOrArn);
    return qualified?.[1] === undefined ? undefined : this.#functions.get(qualified[1]);
  }
}
