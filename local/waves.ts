import { fileURLToPath } from "node:url";
import { MemoryAlarms } from "../functions/alarms/memory.ts";
import type { Clock } from "../functions/clock.ts";
import { HANDLERS, type HandlerName } from "../functions/config.ts";
import { depsFromEnv } from "../functions/handlers/root.ts";
import { triggerDepsFromEnv } from "../functions/handlers/trigger.ts";
import { DynamoRolloutStore } from "../functions/store/dynamodb.ts";
import type { RolloutItem } from "../functions/store/schema.ts";
import type { LocalProxySettingsSchema } from "../functions/traffic/settings.ts";
import type { RolloutExecutionInput } from "../functions/trigger/decide.ts";
import type { WorkflowDeps } from "../functions/workflow/deps.ts";
import { RecordingMetricsSink } from "../functions/workflow/metrics.ts";
import {
  type DeployedTarget,
  type Problem,
  parseRollout,
  type RolloutSpec,
  readSourcesSync,
  resolveWaves,
  SpecError,
  type WavePass,
} from "../statemachine/index.ts";
import { extractStack, handlerNameFor, mergeStacks } from "./asl/extract.ts";
import { LOCAL_ACCOUNT } from "./asl/intrinsics.ts";
import type { LambdaHandler } from "./aws/lambda.ts";
import { createTableFromTemplate, type LocalDynamo, startDynamo } from "./dynamo.ts";
import { putEcrPush } from "./events/ecr-push.ts";
import { type HandlerDeps, handlerFactories, once } from "./handler-factories.ts";
import { type Runtime, type RuntimeFunction, startRuntime } from "./runtime.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

type LocalProxyInput = Parameters<(typeof LocalProxySettingsSchema)["parse"]>[0] & { type: "local-proxy" };

/** One "region" of the embedded runtime: its own controller (table, functions, state machine) and proxy. */
export interface LocalRegion extends DeployedTarget {
  /** The local proxy this region's traffic goes through, and the upstream each pushed tag runs. */
  target: Omit<LocalProxyInput, "type">;
}

export interface LocalWavesOptions {
  /** The rollout files: a spec with `waves`. */
  specFiles: string[];
  /** The deployment's regions, matched against the waves (`resolveWaves`). */
  regions: LocalRegion[];
  /** The ECR repository of the release's image, pushed in the home region. */
  repository?: string;
  /** Which tags start the release (`RolloutWavesProps.tagPattern`). @default every tag */
  tagPattern?: string;
  /** Where the coordinator runs and the image is pushed. @default the first pass's region, account 000000000000 */
  home?: { account: string; region: string };
  clock?: Clock;
  dynamo?: LocalDynamo["engine"] | LocalDynamo;
  /** Each region's table is `<prefix>-<account>-<region>` (several releases can share one DynamoDB); default `rollouts`. */
  tablePrefix?: string;
  /** Wraps each handler; `table` names the region's table (tests use it to inject a failure). */
  wrap?: (name: HandlerName, handler: LambdaHandler, table: string) => LambdaHandler;
}

/** One pass of the release on this machine: its region's controller and rollout. */
export interface LocalPass extends WavePass<LocalRegion> {
  stateMachineArn: string;
  tableName: string;
  store: DynamoRolloutStore;
  item(): Promise<RolloutItem | undefined>;
  /** What the `rollouts` CLI needs to read this region: its table and the façade. */
  env: Record<string, string>;
}

/** A release in waves on this machine: one runtime, one bus, a controller per region, the coordinator. */
export interface LocalWaves {
  runtime: Runtime;
  dynamo: LocalDynamo;
  spec: RolloutSpec;
  rollout: string;
  passes: LocalPass[];
  coordinatorArn: string;
  metrics: RecordingMetricsSink;
  /** The CloudWatch alarms every region's functions read (not part of the local façade). */
  alarms: MemoryAlarms;
  /**
   * Starts the coordinator on a pushed image, with the input and the execution name the trigger
   * gives a push (`<rollout>-<24 hex of the digest>-g<generation>`); returns its execution.
   */
  release(tag: string, digest: string, generation: number): string;
  /**
   * Puts the `ECR Image Action` event of a push to the release's repository on the bus, as ECR
   * does on AWS (`tag` null: a push by digest only): the home rule, if it matches, starts the
   * coordinator through its input transformer.
   */
  push(tag: string | null, digest: string, at?: Date): Promise<void>;
  close(): Promise<void>;
}

/**
 * A release in waves on one embedded runtime: the app `RolloutWaves` synthesizes — a stack per
 * pass (its own `RolloutController`: table, functions, Timer and the pass's state machine) and
 * the home stack (the wave coordinator and the ECR push rule) — runs whole, every stack sharing
 * the runtime's event bus and engine. A push put on the bus goes through the home rule's input
 * transformer to the coordinator, whose `startExecution.sync:2` Tasks start each region's rollout
 * in turn. Handlers run in-process through their `createHandler` factories, as in `startLocalStack`.
 */
export async function startLocalWaves(options: LocalWavesOptions): Promise<LocalWaves> {
  const [{ App }, { RolloutWaves, EMBEDDED_CONTEXT }] = await Promise.all([
    import("aws-cdk-lib"),
    import("../infra/index.ts"),
  ]);
  const problems: Problem[] = [];
  const sources = readSourcesSync(
    options.specFiles.map((f) => (f.startsWith("/") ? f : `${ROOT}${f}`)),
    problems,
  );
  if (problems.length > 0) throw new SpecError(problems);
  const { spec } = parseRollout(sources);
  if (!spec.waves) throw new TypeError(`rollout ${spec.name} has no waves`);
  const resolved = resolveWaves(spec.waves, options.regions);
  if (resolved.problems.length > 0) {
    throw new SpecError(
      resolved.problems.map((message) => ({ file: options.specFiles.join(", "), message })),
    );
  }
  const repository = options.repository ?? spec.name;
  const tableOf = (p: WavePass<LocalRegion>) =>
    `${options.tablePrefix ?? "rollouts"}-${p.target.account ? `${p.target.account}-` : ""}${p.target.region}`;
  const home = options.home ?? {
    account: LOCAL_ACCOUNT,
    region: (resolved.passes[0] as WavePass<LocalRegion>).target.region,
  };
  const tables = new Map(resolved.passes.map((p) => [p.target, tableOf(p)]));
  const app = new App({
    context: {
      "aws:cdk:bundling-stacks": [],
      "aws:cdk:enable-path-metadata": true,
      [EMBEDDED_CONTEXT]: true,
    },
    builtinCloudFormationValidation: false,
  });
  const waves = new RolloutWaves(app, "Waves", {
    spec,
    home,
    repository,
    ...(options.tagPattern === undefined ? {} : { tagPattern: options.tagPattern }),
    targets: options.regions.map((r) => ({
      region: r.region,
      ...(r.account === undefined ? {} : { account: r.account }),
      ...(r.labels === undefined ? {} : { labels: r.labels }),
      target: { type: "local-proxy", ...r.target } as never,
      // A region in another account gets the role RolloutWaves creates there; on this machine
      // every region is local, so assuming it changes nothing.
      controller: { tableName: tables.get(r) ?? tableOf({ target: r } as WavePass<LocalRegion>) },
    })),
  });
  const assembly = app.synth();
  // Each stack's resources the template does not name get the stack's name first, as
  // CloudFormation names them: the pass stacks hold the same constructs.
  // Each pass's state machine at its ARN on AWS (its region and account), which the coordinator
  // names; each stack's resources the template does not name get the stack's name first, as
  // CloudFormation names them: the pass stacks hold the same constructs.
  const extracted = mergeStacks(
    [...waves.regionStacks, waves.homeStack].map((stack) => {
      const template = assembly.getStackArtifact(stack.artifactId).template as {
        Resources?: Record<string, { Type?: string; Properties?: { StateMachineName?: unknown } }>;
      };
      const refs: Record<string, string> = {};
      for (const [logicalId, resource] of Object.entries(template.Resources ?? {})) {
        const name = resource.Properties?.StateMachineName;
        if (resource.Type === "AWS::StepFunctions::StateMachine" && typeof name === "string") {
          refs[logicalId] = `arn:aws:states:${stack.region}:${stack.account}:stateMachine:${name}`;
        }
      }
      return extractStack(template, {
        stackName: stack.stackName,
        namePrefix: `${stack.stackName}-`,
        refs,
      });
    }),
  );

  const ownDynamo = typeof options.dynamo !== "object";
  const dynamo =
    typeof options.dynamo === "object" ? options.dynamo : await startDynamo(options.dynamo ?? "dynalite");
  const metrics = new RecordingMetricsSink();
  const clock = options.clock;
  const byFile = Object.fromEntries(Object.entries(HANDLERS).map(([k, v]) => [v, k])) as Record<
    string,
    HandlerName
  >;
  // CloudWatch's alarms are not part of the façade: the functions read the local ones.
  const alarms = new MemoryAlarms();
  const depsFor = (env: Record<string, string>): HandlerDeps => ({
    workflow: once((): WorkflowDeps => ({ ...depsFromEnv(env, clock ? { clock } : {}), metrics, alarms })),
    trigger: once(() => triggerDepsFromEnv(env, clock ? { clock } : {})),
  });
  const functions = new Map<string, RuntimeFunction>();
  for (const fn of extracted.functions) {
    const file = handlerNameFor(fn, Object.values(HANDLERS));
    if (!file) continue;
    const name = byFile[file] as HandlerName;
    functions.set(fn.arn, {
      factory: (env) => {
        const handler = handlerFactories[name](depsFor({ ...env }));
        return options.wrap ? options.wrap(name, handler, env.ROLLOUTS_TABLE ?? "") : handler;
      },
    });
  }
  const admin = dynamo.client();
  for (const table of extracted.tables) await createTableFromTemplate(admin, table.name, table.properties);

  const runtime = await startRuntime({
    stack: extracted,
    functions,
    ...(clock ? { clock } : {}),
    env: { AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint },
  });
  const passes: LocalPass[] = resolved.passes.map((p) => {
    const tableName = tableOf(p);
    const store = new DynamoRolloutStore({ client: dynamo.client(), tableName });
    return {
      ...p,
      stateMachineArn: runtime.stateMachineArn(`${spec.name}-${p.pass}`),
      tableName,
      store,
      item: () => store.get(spec.name),
      env: { ...runtime.env, AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint, ROLLOUTS_TABLE: tableName },
    };
  });
  const coordinatorArn = runtime.stateMachineArn(`${spec.name}-waves`);
  return {
    runtime,
    dynamo,
    spec,
    rollout: spec.name,
    passes,
    coordinatorArn,
    metrics,
    alarms,
    release(tag, digest, generation) {
      const executionName = `${spec.name}-${digest.replace(/^sha256:/, "").slice(0, 24)}-g${generation}`;
      const input: RolloutExecutionInput = {
        rollout: spec.name,
        revision: { repository, image: `${repository}:${tag}`, digest, tag },
        trigger: {
          eventId: `${executionName}-event`,
          eventTime: runtime.clock.now(),
          generation,
          executionName,
        },
      };
      return runtime.startExecution({ stateMachineArn: coordinatorArn, name: executionName, input })
        .executionArn;
    },
    push(tag, digest, at) {
      return putEcrPush(runtime, { repository, digest, tag, at });
    },
    close: async () => {
      await runtime.close();
      admin.destroy();
      if (ownDynamo) await dynamo.close();
    },
  };
}
