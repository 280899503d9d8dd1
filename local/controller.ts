import { fileURLToPath } from "node:url";
import { MemoryAlarms } from "../functions/alarms/memory.ts";
import type { Clock } from "../functions/clock.ts";
import {
  HANDLERS,
  type HandlerName,
  ROLLOUT_HANDLERS,
  type RolloutHandlerName,
} from "../functions/config.ts";
import { depsFromEnv } from "../functions/handlers/root.ts";
import { triggerDepsFromEnv } from "../functions/handlers/trigger.ts";
import { DynamoRolloutStore } from "../functions/store/dynamodb.ts";
import { RecordingMetricsSink } from "../functions/workflow/metrics.ts";
import { type ExtractedFunction, type ExtractedStack, extractStack, handlerNameFor } from "./asl/extract.ts";
import type { LambdaHandler } from "./aws/lambda.ts";
import { createTableFromTemplate, type LocalDynamo, startDynamo } from "./dynamo.ts";
import { type HandlerDeps, handlerFactories, once, rolloutHandlerFactories } from "./handler-factories.ts";
import { LOCAL_PROXY_FUNCTION_ARN, localProxyPlugin } from "./proxy/target.ts";
import { type Runtime, type RuntimeFunction, startRuntime } from "./runtime.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** A rollout file as the synthesized app reads it: a relative path is the repository's. */
export function specPath(file: string): string {
  return file.startsWith("/") ? file : `${ROOT}${file}`;
}

/**
 * A CDK app as the embedded runtime synthesizes it: bundling skipped (the handlers run from their
 * sources), path metadata kept (it names each function's handler) and the construct told it runs
 * here (`EMBEDDED_CONTEXT`). aws-cdk-lib costs seconds to import: only the embedded stacks pay for
 * it, on first use, so it comes with the app, as do the constructs.
 */
export async function embeddedApp() {
  const [cdk, infra] = await Promise.all([import("aws-cdk-lib"), import("../infra/index.ts")]);
  const app = new cdk.App({
    context: {
      "aws:cdk:bundling-stacks": [],
      "aws:cdk:enable-path-metadata": true,
      [infra.EMBEDDED_CONTEXT]: true,
    },
    builtinCloudFormationValidation: false,
  });
  return { app, cdk, infra };
}

export interface ControllerOptions {
  /** The synthesized template (its Function URLs are served too), extracted here. */
  template?: unknown;
  /** Or several templates already extracted and merged (`mergeStacks`). */
  stack?: ExtractedStack;
  /** A `ManualClock` runs everything in virtual time; the default runs in real time. */
  clock?: Clock;
  /** DynamoDB engine (started and stopped with the controller), or one already running (left running). */
  dynamo?: LocalDynamo["engine"] | LocalDynamo;
  /** Wraps each controller handler; `env` is its function's (tests use it to inject a failure). */
  wrap?: (name: HandlerName, handler: LambdaHandler, env: Readonly<Record<string, string>>) => LambdaHandler;
  /** Functions the template does not declare, by name (the local functions a rollout's hooks name). */
  functions?: Record<string, LambdaHandler>;
}

/** Synthesized controllers running on this machine: what the local stack and the local waves share. */
export interface LocalController {
  runtime: Runtime;
  dynamo: LocalDynamo;
  /** What runs: the template's state machines, functions, rules and tables. */
  stack: ExtractedStack;
  /** Lifecycle and CloudWatch data the handlers produced. */
  metrics: RecordingMetricsSink;
  /** The CloudWatch alarms every function reads (not part of the local façade). */
  alarms: MemoryAlarms;
  /** The rollout store over one of the tables. */
  store(tableName: string): DynamoRolloutStore;
  /** What the `rollouts` CLI needs to read one of the tables: the façade's endpoints, the table, dummy credentials. */
  env(tableName: string): Record<string, string>;
  /** The Function URL of a rollout's own function (`ROLLOUT_HANDLERS`), as the runtime serves it. */
  functionUrl(name: RolloutHandlerName): string | undefined;
  close(): Promise<void>;
}

/**
 * Runs synthesized controllers (one template, or several merged) in the embedded runtime: creates
 * their tables on a local DynamoDB from the template's own properties, binds every function to its
 * shipped handler (`bindHandlers`), adds the local proxy's target plugin
 * (`LOCAL_PROXY_FUNCTION_ARN`) and starts the runtime with the state machines, rules and Function
 * URLs of the template, the SDK clients pointed at its façade and DynamoDB.
 */
export async function startController(options: ControllerOptions): Promise<LocalController> {
  // A first extraction (without running anything) to learn the functions and the tables.
  const stack = options.stack ?? extractStack(options.template);
  const dynamo =
    typeof options.dynamo === "object" ? options.dynamo : await startDynamo(options.dynamo ?? "dynalite");
  const admin = dynamo.client();
  for (const table of stack.tables) await createTableFromTemplate(admin, table.name, table.properties);
  const metrics = new RecordingMetricsSink();
  const alarms = new MemoryAlarms();
  const clock = options.clock;
  const bound = bindHandlers(stack.functions, { metrics, alarms, ...options });
  // The local proxy's plugin, which no template declares: a rollout on the proxy names its ARN.
  bound.functions.set(LOCAL_PROXY_FUNCTION_ARN, { handler: localProxyPlugin(clock ? { clock } : {}) });
  for (const [name, handler] of Object.entries(options.functions ?? {}))
    bound.functions.set(name, { handler });
  const runtime = await startRuntime({
    ...(options.stack ? { stack: options.stack } : { template: options.template }),
    functions: bound.functions,
    ...(clock ? { clock } : {}),
    env: { AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint },
  });
  return {
    runtime,
    dynamo,
    stack,
    metrics,
    alarms,
    store: (tableName) => new DynamoRolloutStore({ client: dynamo.client(), tableName }),
    env: (tableName) => ({
      ...runtime.env,
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      ROLLOUTS_TABLE: tableName,
    }),
    functionUrl: (name) =>
      runtime.functionUrls.find((u) => bound.rolloutFunctions.get(u.functionArn) === name)?.url,
    close: async () => {
      await runtime.close();
      admin.destroy();
      if (dynamo !== options.dynamo) await dynamo.close();
    },
  };
}

/** What every handler shares beside the ports its function's environment gives. */
interface HandlerContext {
  clock?: Clock;
  metrics: RecordingMetricsSink;
  alarms: MemoryAlarms;
  wrap?: ControllerOptions["wrap"];
}

/**
 * Binds each function to the shipped handler its code names: a controller's (`HANDLERS`) through
 * the one table (`handlerFactories`), or a rollout's own (`ROLLOUT_HANDLERS`: the model router).
 * Keyed by ARN, which merged stacks keep apart; answers which function is which rollout handler,
 * for its Function URL. A function no handler claims is left to the runtime.
 */
function bindHandlers(
  functions: readonly ExtractedFunction[],
  context: HandlerContext,
): { functions: Map<string, RuntimeFunction>; rolloutFunctions: Map<string, RolloutHandlerName> } {
  const byFile = new Map(Object.entries(HANDLERS).map(([k, v]) => [v as string, k as HandlerName]));
  const byRolloutFile = new Map(
    Object.entries(ROLLOUT_HANDLERS).map(([k, v]) => [v as string, k as RolloutHandlerName]),
  );
  const { clock, wrap } = context;
  const rolloutFactories = rolloutHandlerFactories(clock ? { now: () => clock.now() } : {});
  const bound = new Map<string, RuntimeFunction>();
  const rolloutFunctions = new Map<string, RolloutHandlerName>();
  for (const fn of functions) {
    const name = byFile.get(handlerNameFor(fn, [...byFile.keys()]) ?? "");
    const own = name ? undefined : byRolloutFile.get(handlerNameFor(fn, [...byRolloutFile.keys()]) ?? "");
    if (name) {
      bound.set(fn.arn, {
        factory: (env) => {
          const handler = handlerFactories[name](depsFromEnvironment({ ...env }, context));
          return wrap ? wrap(name, handler, env) : handler;
        },
      });
    } else if (own) {
      rolloutFunctions.set(fn.arn, own);
      bound.set(fn.arn, { factory: (env) => rolloutFactories[own]({ ...env }) });
    }
  }
  return { functions: bound, rolloutFunctions };
}

/**
 * The ports a function's environment gives, built at its first invocation over the same adapters
 * as on AWS, on the runtime's clock. CloudWatch's alarms are not part of the façade: the functions
 * read the local ones, and record their metrics here.
 */
function depsFromEnvironment(env: Record<string, string>, context: HandlerContext): HandlerDeps {
  const { clock, metrics, alarms } = context;
  return {
    workflow: once(() => ({ ...depsFromEnv(env, clock ? { clock } : {}), metrics, alarms })),
    trigger: once(() => triggerDepsFromEnv(env, clock ? { clock } : {})),
  };
}
