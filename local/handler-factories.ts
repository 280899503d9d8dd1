import type { HandlerName, RolloutHandlerName } from "../functions/config.ts";
import { createHandler as createAbort } from "../functions/handlers/abort.ts";
import { createHandler as createAwait } from "../functions/handlers/await.ts";
import { createHandler as createBegin } from "../functions/handlers/begin.ts";
import { createHandler as createCheckAlarms } from "../functions/handlers/check-alarms.ts";
import { createHandler as createCheckReady } from "../functions/handlers/check-ready.ts";
import { createHandler as createHook } from "../functions/handlers/hook.ts";
import { createHandler as createPromote } from "../functions/handlers/promote.ts";
import { createHandler as createResume } from "../functions/handlers/resume.ts";
import { createHandler as createRouter, routerFromEnv } from "../functions/handlers/router.ts";
import { createHandler as createSetWeight } from "../functions/handlers/set-weight.ts";
import { createHandler as createStartAnalysis } from "../functions/handlers/start-analysis.ts";
import { createHandler as createTrigger } from "../functions/handlers/trigger.ts";
import type { TriggerDeps } from "../functions/trigger/start-rollout.ts";
import type { WorkflowDeps } from "../functions/workflow/deps.ts";
import { localStreamingRuntime } from "./aws/function-url.ts";
import { type LambdaHandler, streamingHandler } from "./aws/lambda.ts";

/**
 * The ports a handler is built over, each asked for at the handler's first invocation: the
 * workflow's, or the trigger's (a handler asks for one of them only).
 */
export interface HandlerDeps {
  readonly workflow: () => WorkflowDeps;
  readonly trigger: () => TriggerDeps;
}

/**
 * Every handler's `createHandler` factory, by name: the one table the embedded runtime runs the
 * shipped handlers from, whether over a function's environment (the synthesized controllers) or
 * over in-memory ports (a compiled rollout in the tests). A handler added to `HANDLERS` without a
 * line here fails the type check.
 */
export const handlerFactories: Readonly<Record<HandlerName, (deps: HandlerDeps) => LambdaHandler>> = {
  trigger: (deps) => createTrigger(deps.trigger) as LambdaHandler,
  begin: (deps) => createBegin(deps.workflow) as LambdaHandler,
  setWeight: (deps) => createSetWeight(deps.workflow) as LambdaHandler,
  checkReady: (deps) => createCheckReady(deps.workflow) as LambdaHandler,
  await: (deps) => createAwait(deps.workflow) as LambdaHandler,
  startAnalysis: (deps) => createStartAnalysis(deps.workflow) as LambdaHandler,
  resume: (deps) => createResume(deps.workflow) as LambdaHandler,
  promote: (deps) => createPromote(deps.workflow) as LambdaHandler,
  abort: (deps) => createAbort(deps.workflow) as LambdaHandler,
  checkAlarms: (deps) => createCheckAlarms(deps.workflow) as LambdaHandler,
  hook: (deps) => createHook(deps.workflow) as LambdaHandler,
};

/**
 * The `createHandler` factories of the functions a rollout gets of its own (`ROLLOUT_HANDLERS`),
 * by name: the model router, a response-streaming handler over the table and SageMaker its
 * environment names, its observations timed by `now` (the runtime's clock).
 */
export function rolloutHandlerFactories(deps: {
  readonly now?: () => number;
}): Record<RolloutHandlerName, (env: Record<string, string>) => LambdaHandler> {
  return {
    router: (env) => {
      const router = once(() => routerFromEnv(env, deps.now ? { now: deps.now } : {}));
      return streamingHandler(createRouter(router, localStreamingRuntime));
    },
  };
}

/** `build()` on the first call only; later calls return what it built (deps once per environment). */
export function once<T>(build: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= build();
    return value;
  };
}
