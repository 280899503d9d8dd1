import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Duration } from "aws-cdk-lib";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as nodejs from "aws-cdk-lib/aws-lambda-nodejs";
import {
  HANDLERS,
  type HandlerName,
  ROLLOUT_HANDLERS,
  type RolloutHandlerName,
} from "../functions/config.ts";
import { ANALYSIS_FUNCTION_TIMEOUT_SECONDS } from "../statemachine/limits.ts";

/** The repository root: `functions/handlers/*.ts` and `package-lock.json` live there. */
export const PROJECT_ROOT = fileURLToPath(new URL("..", import.meta.url));

/** The handler file of a function, as `NodejsFunction` wants its `entry`. */
export function handlerEntry(name: HandlerName | RolloutHandlerName, root = PROJECT_ROOT): string {
  return `${root.replace(/\/$/, "")}/functions/handlers/${handlerFile(name)}.ts`;
}

/** A handler's file name: the controller's (`HANDLERS`) or a rollout's own (`ROLLOUT_HANDLERS`). */
const handlerFile = (name: HandlerName | RolloutHandlerName): string =>
  Object.hasOwn(ROLLOUT_HANDLERS, name)
    ? ROLLOUT_HANDLERS[name as RolloutHandlerName]
    : HANDLERS[name as HandlerName];

/**
 * The folder of a handler's prebuilt bundle (`index.mjs` and its source map), or undefined when
 * there is none. `npm run build` writes them to `dist/handlers/<name>/` beside the compiled
 * construct, so the installed package deploys them as they are: a user's app needs neither
 * esbuild nor this package's sources. Running from the sources (this repository's tests and
 * apps), there is no such folder and the construct bundles `functions/handlers/*.ts` itself.
 */
export function prebuiltBundle(
  name: HandlerName | RolloutHandlerName,
  from = import.meta.url,
): string | undefined {
  const dir = fileURLToPath(new URL(`../handlers/${handlerFile(name)}/`, from));
  return existsSync(join(dir, "index.mjs")) ? dir : undefined;
}

/**
 * What a function calls besides the table (which every function reads and writes), so that each
 * role gets only those grants. One line per handler is also the IAM table of `docs/cdk.md`.
 * - `target`: the traffic target of every rollout (ELBv2/ECS or Lambda), see `target-grants.ts`
 * - `timer`: Scheduler schedules in the group, `iam:PassRole` on the Scheduler role, the ticker
 * - `tokens`: `SendTaskSuccess`/`SendTaskFailure` (the abort channel and the waits' results)
 * - `metrics`: CloudWatch `GetMetricData` and/or AMP `QueryMetrics` when configured, and the
 *   Datadog, New Relic, InfluxDB and Wavefront secrets (`metricSecrets`) when given
 * - `events`: `PutEvents` on the lifecycle bus
 * - `executions`: start (and stop) the rollouts' executions
 * - `alarms`: `cloudwatch:DescribeAlarms` on the alarms the rollouts watch
 * - `hooks`: `lambda:InvokeFunction` on exactly the rollouts' hook functions
 */
export type Need = "target" | "timer" | "tokens" | "metrics" | "events" | "executions" | "alarms" | "hooks";

export const FUNCTION_NEEDS: Readonly<Record<HandlerName, readonly Need[]>> = {
  // Starts the execution; supersedes an older running revision through the abort channel.
  trigger: ["executions", "tokens", "events"],
  // Reads the target and deploys the candidate; records the revision and announces it
  // (`RolloutUpdated`); ends the wait of the execution it takes over (a release in waves has no
  // trigger to supersede it).
  begin: ["target", "tokens", "events"],
  setWeight: ["target", "events"],
  checkReady: ["target"],
  // A pause with a duration schedules its own resumption.
  await: ["timer", "events"],
  // Creates the run and takes its first due measurements at once (which may already answer the token).
  startAnalysis: ["timer", "metrics", "tokens", "events"],
  // The Timer firing: ends a timed pause (token), runs a due analysis tick, a delayed scale-down, an abort's next poll.
  resume: ["target", "timer", "metrics", "tokens", "events"],
  // Moves all traffic and schedules the old side's scale-down.
  promote: ["target", "timer", "events"],
  // Puts the traffic back and schedules the candidate's scale-down (or the next poll).
  abort: ["target", "timer", "events"],
  // A step boundary: reads the rollout's alarms (an alarm in ALARM aborts before the next step).
  checkAlarms: ["alarms"],
  // Stores the hook's token on the item, then starts the hook function with it (once: a retry
  // with a new token after the start ends that wait instead of starting the hook again).
  hook: ["hooks", "tokens"],
};

/**
 * esbuild settings of every function. ESM because the sources are ESM (`"type": "module"`, `.ts`
 * import extensions) and top-level `await` in a composition root then runs during the init
 * phase; the `createRequire` banner lets the CommonJS parts of dependencies `require` Node
 * built-ins inside an ESM bundle. The AWS SDK is bundled, not taken from the runtime, so the
 * versions the tests ran against are the versions that run. Target node20 keeps the same bundle
 * runnable by the embedded runtime on Node 20 and by Lambda's Node.js 22.
 */
export const BUNDLING: nodejs.BundlingOptions = {
  format: nodejs.OutputFormat.ESM,
  target: "node20",
  mainFields: ["module", "main"],
  minify: true,
  sourceMap: true,
  sourcesContent: false,
  externalModules: [],
  forceDockerBundling: false,
  banner: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
};

/** Function defaults the construct applies to every handler. */
export const FUNCTION_DEFAULTS = {
  runtime: lambda.Runtime.NODEJS_22_X,
  architecture: lambda.Architecture.ARM_64,
  tracing: lambda.Tracing.ACTIVE,
  memorySize: 512,
  // Every handler is a few AWS calls; analysis ticks query providers with their own timeouts, which
  // the spec keeps below this one (MAX_PROVIDER_TIMEOUT_SECONDS).
  timeout: Duration.seconds(ANALYSIS_FUNCTION_TIMEOUT_SECONDS),
} as const;
