import type { MemoryAlarms } from "../functions/alarms/memory.ts";
import type { Clock } from "../functions/clock.ts";
import type { HandlerName } from "../functions/config.ts";
import type { DynamoRolloutStore } from "../functions/store/dynamodb.ts";
import type { RolloutItem } from "../functions/store/schema.ts";
import type { RolloutExecutionInput } from "../functions/trigger/decide.ts";
import type { RecordingMetricsSink } from "../functions/workflow/metrics.ts";
import type { RolloutTarget } from "../infra/props.ts";
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
import { type ExtractedStack, extractStack, mergeStacks } from "./asl/extract.ts";
import { LOCAL_ACCOUNT } from "./asl/intrinsics.ts";
import type { LambdaHandler } from "./aws/lambda.ts";
import { embeddedApp, specPath, startController } from "./controller.ts";
import type { LocalDynamo } from "./dynamo.ts";
import { putEcrPush } from "./events/ecr-push.ts";
import type { Runtime } from "./runtime.ts";

/** One "region" of the embedded runtime: its own controller (table, functions, state machine) and proxy. */
export interface LocalRegion extends DeployedTarget {
  /**
   * The region's target: the local proxy its traffic goes through and the upstream each pushed tag
   * runs (`localProxyTarget` of `proxy/target.ts`).
   */
  target: RolloutTarget;
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
 * in turn. The stacks run on `startController`, as `startEmbeddedStack`'s does.
 */
export async function startLocalWaves(options: LocalWavesOptions): Promise<LocalWaves> {
  const { spec, passes: resolved } = loadWaves(options);
  const repository = options.repository ?? spec.name;
  const tableOf = (region: LocalRegion) =>
    `${options.tablePrefix ?? "rollouts"}-${region.account ? `${region.account}-` : ""}${region.region}`;
  const { wrap } = options;
  const controller = await startController({
    stack: await synthesizeWaves(options, { spec, passes: resolved, repository, tableOf }),
    clock: options.clock,
    dynamo: options.dynamo,
    wrap: wrap && ((name, handler, env) => wrap(name, handler, env.ROLLOUTS_TABLE ?? "")),
  });
  const { runtime } = controller;
  const passes: LocalPass[] = resolved.map((p) => {
    const tableName = tableOf(p.target);
    const store = controller.store(tableName);
    return {
      ...p,
      stateMachineArn: runtime.stateMachineArn(`${spec.name}-${p.pass}`),
      tableName,
      store,
      item: () => store.get(spec.name),
      env: controller.env(tableName),
    };
  });
  const coordinatorArn = runtime.stateMachineArn(`${spec.name}-waves`);
  return {
    runtime,
    dynamo: controller.dynamo,
    spec,
    rollout: spec.name,
    passes,
    coordinatorArn,
    metrics: controller.metrics,
    alarms: controller.alarms,
    release: releaseStarter(runtime, { rollout: spec.name, repository, coordinatorArn }),
    push: (tag, digest, at) => putEcrPush(runtime, { repository, digest, tag, at }),
    close: controller.close,
  };
}

/**
 * The rollout files' spec and its passes, its waves matched to the regions (`resolveWaves`); a
 * problem with either is a `SpecError`.
 */
function loadWaves(options: LocalWavesOptions): { spec: RolloutSpec; passes: WavePass<LocalRegion>[] } {
  const problems: Problem[] = [];
  const sources = readSourcesSync(options.specFiles.map(specPath), problems);
  if (problems.length > 0) throw new SpecError(problems);
  const { spec } = parseRollout(sources);
  if (!spec.waves) throw new TypeError(`rollout ${spec.name} has no waves`);
  const resolved = resolveWaves(spec.waves, options.regions);
  if (resolved.problems.length > 0) {
    throw new SpecError(
      resolved.problems.map((message) => ({ file: options.specFiles.join(", "), message })),
    );
  }
  return { spec, passes: resolved.passes };
}

/**
 * Synthesizes the app `RolloutWaves` builds — a stack per pass (its own `RolloutController` on
 * the region's table) and the home stack — and extracts it as one stack. Each pass's state
 * machine is at its ARN on AWS (its region and account), which the coordinator names; each
 * stack's resources the template does not name get the stack's name first, as CloudFormation
 * names them: the pass stacks hold the same constructs.
 */
async function synthesizeWaves(
  options: LocalWavesOptions,
  release: {
    spec: RolloutSpec;
    passes: WavePass<LocalRegion>[];
    repository: string;
    tableOf: (region: LocalRegion) => string;
  },
): Promise<ExtractedStack> {
  const { app, infra } = await embeddedApp();
  const { spec, passes, tableOf } = release;
  const waves = new infra.RolloutWaves(app, "Waves", {
    spec,
    home: options.home ?? {
      account: LOCAL_ACCOUNT,
      region: (passes[0] as WavePass<LocalRegion>).target.region,
    },
    repository: release.repository,
    ...(options.tagPattern === undefined ? {} : { tagPattern: options.tagPattern }),
    targets: options.regions.map((r) => ({
      region: r.region,
      ...(r.account === undefined ? {} : { account: r.account }),
      ...(r.labels === undefined ? {} : { labels: r.labels }),
      target: r.target,
      // A region in another account gets the role RolloutWaves creates there; on this machine
      // every region is local, so assuming it changes nothing.
      controller: { tableName: tableOf(r) },
    })),
  });
  const assembly = app.synth();
  return mergeStacks(
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
      return extractStack(template, { stackName: stack.stackName, namePrefix: `${stack.stackName}-`, refs });
    }),
  );
}

/**
 * `LocalWaves.release`: starts the coordinator with the input and the execution name the
 * trigger gives a push (`<rollout>-<24 hex of the digest>-g<generation>`).
 */
function releaseStarter(
  runtime: Runtime,
  release: { rollout: string; repository: string; coordinatorArn: string },
): LocalWaves["release"] {
  const { rollout, repository } = release;
  return (tag, digest, generation) => {
    const executionName = `${rollout}-${digest.replace(/^sha256:/, "").slice(0, 24)}-g${generation}`;
    const input: RolloutExecutionInput = {
      rollout,
      revision: { repository, image: `${repository}:${tag}`, digest, tag },
      trigger: {
        eventId: `${executionName}-event`,
        eventTime: runtime.clock.now(),
        generation,
        executionName,
      },
    };
    return runtime.startExecution({ stateMachineArn: release.coordinatorArn, name: executionName, input })
      .executionArn;
  };
}
