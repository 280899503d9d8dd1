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
  compileWaves,
  type DeployedTarget,
  type Problem,
  parseRollout,
  passSpec,
  type RolloutSpec,
  readSourcesSync,
  resolveWaves,
  SpecError,
  type WavePass,
  wavePlaceholders,
} from "../statemachine/index.ts";
import { extractStack, handlerNameFor } from "./asl/extract.ts";
import { LOCAL_ACCOUNT } from "./asl/intrinsics.ts";
import type { LambdaHandler } from "./aws/lambda.ts";
import { createTableFromTemplate, type LocalDynamo, startDynamo } from "./dynamo.ts";
import { handlerFactories } from "./handler-factories.ts";
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
  /** The ECR repository of the release's image. */
  repository?: string;
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
  close(): Promise<void>;
}

/**
 * Several "regions" on one embedded runtime: the synthesized app holds one `RolloutController`
 * per region (its own table, functions, Timer and the pass's state machine), all sharing the
 * runtime's event bus and engine, and the wave coordinator compiled from the same spec, whose
 * `startExecution.sync:2` Tasks start each region's rollout in turn. Handlers run in-process
 * through their `createHandler` factories, as in `startLocalStack`.
 */
export async function startLocalWaves(options: LocalWavesOptions): Promise<LocalWaves> {
  const [{ App, Stack }, ecr, { RolloutController, EMBEDDED_CONTEXT }] = await Promise.all([
    import("aws-cdk-lib"),
    import("aws-cdk-lib/aws-ecr"),
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
  const app = new App({
    context: {
      "aws:cdk:bundling-stacks": [],
      "aws:cdk:enable-path-metadata": true,
      [EMBEDDED_CONTEXT]: true,
    },
    builtinCloudFormationValidation: false,
  });
  const stack = new Stack(app, "SfnRolloutsWaves");
  const tableOf = (p: WavePass<LocalRegion>) =>
    `${options.tablePrefix ?? "rollouts"}-${p.target.account ? `${p.target.account}-` : ""}${p.target.region}`;
  resolved.passes.forEach((p, i) => {
    const controller = new RolloutController(stack, `Region${i + 1}`, { tableName: tableOf(p) });
    // The coordinator starts each region's rollout: the construct's push rule of a region names a
    // repository of its own that nothing pushes to, so a push never starts a region by itself.
    controller.addRollout("Rollout", {
      spec: passSpec(spec, p),
      target: { type: "local-proxy", ...p.target.target } as never,
      trigger: {
        repository: ecr.Repository.fromRepositoryName(stack, `Repository${i + 1}`, `${repository}-${p.pass}`),
      },
    });
  });
  const template = app.synth().getStackByName(stack.stackName).template as unknown;

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
  const workflowDeps = (env: Record<string, string>) =>
    once((): WorkflowDeps => ({ ...depsFromEnv(env, clock ? { clock } : {}), metrics, alarms }));
  const factories = handlerFactories({
    workflow: workflowDeps,
    trigger: (env) => once(() => triggerDepsFromEnv(env, clock ? { clock } : {})),
  });
  const extracted = extractStack(template);
  const functions = new Map<string, RuntimeFunction>();
  for (const fn of extracted.functions) {
    const file = handlerNameFor(fn, Object.values(HANDLERS));
    if (!file) continue;
    const name = byFile[file] as HandlerName;
    functions.set(fn.logicalId, {
      factory: (env) => {
        const handler = factories[name]({ ...env });
        return options.wrap ? options.wrap(name, handler, env.ROLLOUTS_TABLE ?? "") : handler;
      },
    });
  }
  const admin = dynamo.client();
  for (const table of extracted.tables) await createTableFromTemplate(admin, table.name, table.properties);

  const machineOf = (i: number) => {
    const found = extracted.stateMachines.find(
      (m) => m.logicalId.startsWith(`Region${i + 1}Rollout`) && !m.logicalId.includes("Ticker"),
    );
    if (!found) throw new Error(`the synthesized stack has no rollout state machine for region ${i + 1}`);
    return found;
  };
  const coordinated = resolved.passes.map((p) => ({
    ...p,
    target: { ...p.target, crossAccount: p.target.account !== undefined },
  }));
  // Each pass's state machine in its own region and account, as on AWS.
  const regionalArn = (i: number) => {
    const target = (resolved.passes[i] as WavePass<LocalRegion>).target;
    return `arn:aws:states:${target.region}:${target.account ?? LOCAL_ACCOUNT}:stateMachine:${machineOf(i).name}`;
  };
  const coordinatorName = `${spec.name}-waves`;
  const substitutions = Object.fromEntries(
    resolved.passes.flatMap((p, i) => {
      const names = wavePlaceholders(i + 1);
      return [
        [names.stateMachineArn, regionalArn(i)],
        // Every region is on this machine: the role another account would be assumed with is only named.
        ...(p.target.account
          ? [[names.roleArn, `arn:aws:iam::${p.target.account}:role/${spec.name}-waves`]]
          : []),
      ];
    }),
  );
  const runtime = await startRuntime({
    template,
    refs: Object.fromEntries(resolved.passes.map((_, i) => [machineOf(i).logicalId, regionalArn(i)])),
    functions,
    definitions: [
      { name: coordinatorName, definition: compileWaves(spec, coordinated) as never, substitutions },
    ],
    ...(clock ? { clock } : {}),
    env: { AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint },
  });
  const passes: LocalPass[] = resolved.passes.map((p, i) => {
    const tableName = tableOf(p);
    const store = new DynamoRolloutStore({ client: dynamo.client(), tableName });
    return {
      ...p,
      stateMachineArn: runtime.stateMachineArn(machineOf(i).logicalId),
      tableName,
      store,
      item: () => store.get(spec.name),
      env: { ...runtime.env, AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint, ROLLOUTS_TABLE: tableName },
    };
  });
  const coordinatorArn = runtime.stateMachineArn(coordinatorName);
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
    close: async () => {
      await runtime.close();
      admin.destroy();
      if (ownDynamo) await dynamo.close();
    },
  };
}

function once<T>(build: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= build();
    return value;
  };
}
