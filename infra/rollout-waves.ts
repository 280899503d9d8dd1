import { createHash } from "node:crypto";
import { Stack, Tags } from "aws-cdk-lib";
import * as ecr from "aws-cdk-lib/aws-ecr";
import * as events from "aws-cdk-lib/aws-events";
import * as eventTargets from "aws-cdk-lib/aws-events-targets";
import * as iam from "aws-cdk-lib/aws-iam";
import { Construct } from "constructs";
import { COORDINATOR_TAG } from "../functions/config.ts";
import {
  type DeployedTarget,
  passSpec,
  type RolloutSpec,
  resolveWaves,
  type WavePass,
} from "../statemachine/index.ts";
import { acknowledgeWildcards } from "./nag.ts";
import type { RolloutControllerProps, RolloutTarget } from "./props.ts";
import { type Rollout, RolloutController } from "./rollout-controller.ts";
import { ecrPushPattern, imageTagFilter } from "./tag-pattern.ts";
import { PropsError } from "./validate.ts";
import { WaveCoordinator, type WaveTargetProps } from "./waves.ts";

/** One region (and account) of a release in waves: its traffic target and its controller's settings. */
export interface RolloutWavesTarget extends DeployedTarget {
  /** The traffic this region's rollout moves. */
  readonly target: RolloutTarget;
  /**
   * A role in another account the coordinator assumes there (see `WaveTargetProps.roleArn`).
   * @default for a target in another account, the role `<rollout>-waves-<pass>` this construct
   * creates in the pass's stack (`passRoleName`)
   */
  readonly roleArn?: string;
  /** @default the controller's defaults */
  readonly controller?: RolloutControllerProps;
}

export interface RolloutWavesProps {
  /** The release: a spec with `waves`. */
  readonly spec: RolloutSpec;
  /** Where the coordinator runs and the image is pushed. */
  readonly home: { readonly account: string; readonly region: string };
  /** The ECR repository (in the home account and region) whose push starts the release. */
  readonly repository: string;
  /** Which tags start it, as `RolloutTrigger.tagPattern`. @default every tag */
  readonly tagPattern?: string;
  /** The deployment's regions, matched against the spec's waves. */
  readonly targets: readonly RolloutWavesTarget[];
}

/** The partition of a region, so an ARN in another stack is a plain string. */
function partitionOf(region: string): string {
  if (region.startsWith("cn-")) return "aws-cn";
  if (region.startsWith("us-gov-")) return "aws-us-gov";
  return "aws";
}

/** A role name of at most 64 characters: a longer one keeps its start and a hash of the whole. */
function roleNameOf(base: string): string {
  if (base.length <= 64) return base;
  return `${base.slice(0, 55)}-${createHash("sha256").update(base).digest("hex").slice(0, 8)}`;
}

/** The coordinator's role: `<rollout>-waves-<home region>`, so a role in another account can trust it by ARN. */
export const coordinatorRoleName = (rollout: string, homeRegion: string): string =>
  roleNameOf(`${rollout}-waves-${homeRegion}`);

/** The role a pass in another account is started through: `<rollout>-waves-<pass>`, in that account. */
export const passRoleName = (rollout: string, pass: string): string => roleNameOf(`${rollout}-waves-${pass}`);

/** The rule Step Functions manages to learn when a `.sync` child execution ends. */
const SYNC_RULE = "StepFunctionsGetEventsForStepFunctionsExecutionRule";

/**
 * A whole release in waves in one CDK app: one stack per pass with its own `RolloutController`
 * and the pass's rollout (no push rule of its own, its state machine named
 * `<rollout>-<pass>`), and a home stack with the wave coordinator (`<rollout>-waves`) and the
 * ECR rule that starts it on a push. The coordinator names each region's state machine by an ARN
 * built from those names, so no stack references another: each deploys alone, in any order.
 */
export class RolloutWaves extends Construct {
  readonly homeStack: Stack;
  /** One stack per pass, in pass order. */
  readonly regionStacks: readonly Stack[];
  readonly rollouts: readonly Rollout[];
  readonly coordinator: WaveCoordinator;
  readonly rule: events.Rule;
  /** Without `tagPattern`: the rule that starts a release on a push by digest only (no tag). */
  readonly digestRule?: events.Rule;
  /** The roles created for passes in another account (none given), by pass. */
  readonly passRoles: ReadonlyMap<string, iam.Role>;

  constructor(scope: Construct, id: string, props: RolloutWavesProps) {
    super(scope, id);
    const { spec, home } = props;
    const passes = resolvePasses(id, props);
    this.homeStack = new Stack(this, "Home", { env: home });
    const stacks: Stack[] = [];
    const rollouts: Rollout[] = [];
    const passRoles = new Map<string, iam.Role>();
    const targets: WaveTargetProps[] = props.targets.map((t) => ({
      region: t.region,
      ...(t.account !== undefined ? { account: t.account } : {}),
      ...(t.labels !== undefined ? { labels: t.labels } : {}),
      ...(t.roleArn !== undefined ? { roleArn: t.roleArn } : {}),
      stateMachineArn: "",
    }));
    for (const p of passes) {
      const pass = this.#addPass(props, p);
      rollouts.push(pass.rollout);
      stacks.push(pass.stack);
      if (pass.role) passRoles.set(p.pass, pass.role);
      targets[p.index] = {
        ...(targets[p.index] as WaveTargetProps),
        stateMachineArn: pass.stateMachineArn,
        ...(pass.roleArn !== undefined ? { roleArn: pass.roleArn } : {}),
      };
    }
    this.passRoles = passRoles;
    this.regionStacks = stacks;
    this.rollouts = rollouts;
    this.coordinator = new WaveCoordinator(this.homeStack, "Coordinator", {
      spec,
      targets,
      stateMachineName: `${spec.name}-waves`,
      roleName: coordinatorRoleName(spec.name, home.region),
    });
    this.rule = this.#onPush(props, "OnPush", true);
    this.rule.addTarget(this.#startRelease(props, events.EventField.fromPath("$.detail.image-tag")));
    // Without a tag pattern every push starts a release, a push by digest only too: its revision has no tag.
    if (props.tagPattern === undefined) {
      this.digestRule = this.#onPush(props, "OnPushByDigest", false);
      this.digestRule.addTarget(this.#startRelease(props, null));
    }
  }

  /**
   * One pass's stack: its own controller and the pass's rollout (no push rule: the coordinator
   * starts it), its state machine tagged with the coordinator's ARN, and, in another account with
   * no role given, the role the coordinator assumes there.
   */
  #addPass(props: RolloutWavesProps, p: WavePass<RolloutWavesTarget>): BuiltPass {
    const { spec, home } = props;
    const account = p.target.account ?? home.account;
    const stack = new Stack(this, `Pass-${p.pass}`, { env: { account, region: p.target.region } });
    const controller = new RolloutController(stack, "Controller", p.target.controller ?? {});
    const name = `${spec.name}-${p.pass}`;
    const rollout = controller.addRollout("Rollout", {
      spec: passSpec(spec, p),
      target: p.target.target,
      trigger: {
        repository: ecr.Repository.fromRepositoryName(stack, "Repository", props.repository),
        pushRule: false,
      },
      stateMachineName: name,
    });
    const homePartition = partitionOf(home.region);
    // The coordinator's ARN, built from its name: each pass's state machine names it in a tag, so
    // the CLI finds the release from any pass's region with no stack importing another's output.
    const coordinatorArn = `arn:${homePartition}:states:${home.region}:${home.account}:stateMachine:${spec.name}-waves`;
    Tags.of(rollout.stateMachine).add(COORDINATOR_TAG, coordinatorArn);
    const partition = partitionOf(p.target.region);
    const stateMachineArn = `arn:${partition}:states:${p.target.region}:${account}:stateMachine:${name}`;
    if (account === home.account || p.target.roleArn !== undefined) {
      return { stack, rollout, stateMachineArn, roleArn: p.target.roleArn };
    }
    const role = passRole(stack, {
      roleName: passRoleName(spec.name, p.pass),
      coordinatorRoleArn: `arn:${homePartition}:iam::${home.account}:role/${coordinatorRoleName(spec.name, home.region)}`,
      homeAccount: home.account,
      partition,
      stateMachineArn,
      executions: `arn:${partition}:states:${p.target.region}:${account}:execution:${name}:*`,
      rule: `arn:${partition}:events:${p.target.region}:${account}:rule/${SYNC_RULE}`,
      description: `Assumed by the wave coordinator of ${spec.name} in ${home.account}/${home.region} to run pass ${p.pass}`,
    });
    const roleArn = `arn:${partition}:iam::${account}:role/${passRoleName(spec.name, p.pass)}`;
    return { stack, rollout, stateMachineArn, roleArn, role };
  }

  /** The rule in the home stack that starts a release on a push to the repository: tagged, or by digest only. */
  #onPush(props: RolloutWavesProps, id: string, tagged: boolean): events.Rule {
    const tagFilter = imageTagFilter(props.tagPattern);
    return new events.Rule(this.homeStack, id, {
      description: `Starts the release of ${props.spec.name} in waves on a push${tagged ? "" : " by digest only"} to ${props.repository}`,
      // A push by digest only has no image-tag: EventBridge fills a missing path with nothing,
      // so the tagged rule would give the revision the tag "".
      eventPattern: ecrPushPattern(
        props.repository,
        tagged ? (tagFilter ?? [{ exists: true }]) : [{ exists: false }],
      ),
    });
  }

  /**
   * A push rule's target: the coordinator, started with the trigger's input
   * (`RolloutExecutionInput`). A push through this rule is not numbered (generation 1): the
   * coordinator's execution name tells releases apart.
   */
  #startRelease(props: RolloutWavesProps, tag: string | null): eventTargets.SfnStateMachine {
    const { spec, home } = props;
    const digest = events.EventField.fromPath("$.detail.image-digest");
    const suffix = home.region.startsWith("cn-") ? "amazonaws.com.cn" : "amazonaws.com";
    return new eventTargets.SfnStateMachine(this.coordinator.stateMachine, {
      retryAttempts: 8,
      input: events.RuleTargetInput.fromObject({
        rollout: spec.name,
        revision: {
          repository: props.repository,
          image: `${home.account}.dkr.ecr.${home.region}.${suffix}/${props.repository}@${digest}`,
          digest,
          tag,
        },
        trigger: {
          eventId: events.EventField.eventId,
          eventTime: events.EventField.time,
          generation: 1,
          executionName: events.EventField.eventId,
        },
      }),
    });
  }
}

/** What one pass's stack holds that the coordinator and the construct's fields need. */
interface BuiltPass {
  stack: Stack;
  rollout: Rollout;
  /** The pass's state machine, by the ARN its name gives. */
  stateMachineArn: string;
  /** The role the coordinator assumes for the pass: the one given, the one created, or none. */
  roleArn: string | undefined;
  /** The role created in the pass's account, when it is another and none was given. */
  role?: iam.Role;
}

/** The release's passes, its waves matched against the targets; a spec without waves or a mismatch is refused. */
function resolvePasses(id: string, props: RolloutWavesProps): WavePass<RolloutWavesTarget>[] {
  const { spec } = props;
  if (!spec.waves) throw new PropsError(`RolloutWaves("${id}")`, [`spec: rollout ${spec.name} has no waves`]);
  const resolved = resolveWaves(spec.waves, props.targets);
  if (resolved.problems.length > 0) {
    throw new PropsError(
      `RolloutWaves("${id}")`,
      resolved.problems.map((p) => `spec: ${p}`),
    );
  }
  return resolved.passes;
}

/**
 * The role in a pass's account that the coordinator assumes (the Task's `Credentials`): trusted by
 * the home account only as the coordinator's role (`aws:PrincipalArn`, so it deploys before that
 * role exists), allowed exactly to start the pass's state machine, read and stop its executions,
 * and manage the rule `.sync` needs there.
 */
function passRole(
  stack: Stack,
  options: {
    roleName: string;
    coordinatorRoleArn: string;
    homeAccount: string;
    partition: string;
    stateMachineArn: string;
    executions: string;
    rule: string;
    description: string;
  },
): iam.Role {
  const role = new iam.Role(stack, "CoordinatorRole", {
    roleName: options.roleName,
    description: options.description,
    assumedBy: new iam.ArnPrincipal(
      `arn:${options.partition}:iam::${options.homeAccount}:root`,
    ).withConditions({
      ArnEquals: { "aws:PrincipalArn": options.coordinatorRoleArn },
    }),
  });
  role.addToPolicy(
    new iam.PolicyStatement({
      sid: "StartPass",
      actions: ["states:StartExecution"],
      resources: [options.stateMachineArn],
    }),
  );
  role.addToPolicy(
    new iam.PolicyStatement({
      sid: "FollowPass",
      actions: ["states:DescribeExecution", "states:StopExecution"],
      resources: [options.executions],
    }),
  );
  role.addToPolicy(
    new iam.PolicyStatement({
      sid: "SyncRule",
      actions: ["events:PutTargets", "events:PutRule", "events:DescribeRule"],
      resources: [options.rule],
    }),
  );
  acknowledgeWildcards(
    role,
    [options.executions],
    "the coordinator reads and stops the executions it starts in the pass's state machine, named after each release",
  );
  return role;
}
