import { randomUUID } from "node:crypto";
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
    const serialisedEvent = JSON.parse(JSON.stringify(event ?? null)) as unknown;
    return withEnv(env, async (): Promise<InvokeOutcome> => {
      try {
        registered.handler ??= Promise.resolve(fn.load(env));
        const handler = await registered.handler.catch((error: unknown) => {
          registered.handler = undefined;
          throw error;
        });
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
