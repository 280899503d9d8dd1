import type { HandlerName, RolloutHandlerName } from "../functions/config.ts";
import { createHandler as createAbort } from "../functions/handlers/abort.ts";
import { createHandler as createAnalysisTick } from "../functions/handlers/analysis-tick.ts";
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

/** What a function's environment gives its handler: the workflow's ports, or the trigger's. */
export interface HandlerDeps {
  readonly workflow: (env: Record<string, string>) => () => WorkflowDeps;
  readonly trigger: (env: Record<string, string>) => () => TriggerDeps;
}

/**
 * Every handler's `createHandler` factory, by name, over the deps its environment gives: the one
 * table the embedded stacks (one controller, or one per region of a release) run the shipped
 * handlers from. A handler added to `HANDLERS` without a line here fails the type check.
 */
export function handlerFactories(
  deps: HandlerDeps,
): Record<HandlerName, (env: Record<string, string>) => LambdaHandler> {
  const { workflow } = deps;
  return {
    trigger: (env) => createTrigger(deps.trigger(env)) as LambdaHandler,
    begin: (env) => createBegin(workflow(env)) as LambdaHandler,
    setWeight: (env) => createSetWeight(workflow(env)) as LambdaHandler,
    checkReady: (env) => createCheckReady(workflow(env)) as LambdaHandler,
    await: (env) => createAwait(workflow(env)) as LambdaHandler,
    startAnalysis: (env) => createStartAnalysis(workflow(env)) as LambdaHandler,
    analysisTick: (env) => createAnalysisTick(workflow(env)) as LambdaHandler,
    resume: (env) => createResume(workflow(env)) as LambdaHandler,
    promote: (env) => createPromote(workflow(env)) as LambdaHandler,
    abort: (env) => createAbort(workflow(env)) as LambdaHandler,
    checkAlarms: (env) => createCheckAlarms(workflow(env)) as LambdaHandler,
    hook: (env) => createHook(workflow(env)) as LambdaHandler,
  };
}

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
