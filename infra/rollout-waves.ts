import { Stack } from "aws-cdk-lib";
import * as ecr from "aws-cdk-lib/aws-ecr";
import * as events from "aws-cdk-lib/aws-events";
import * as eventTargets from "aws-cdk-lib/aws-events-targets";
import { Construct } from "constructs";
import { type DeployedTarget, passSpec, type RolloutSpec, resolveWaves } from "../statemachine/index.ts";
import type { RolloutControllerProps, RolloutTarget } from "./props.ts";
import { type Rollout, RolloutController } from "./rollout-controller.ts";
import { imageTagFilter } from "./tag-pattern.ts";
import { PropsError } from "./validate.ts";
import { WaveCoordinator, type WaveTargetProps } from "./waves.ts";

/** One region (and account) of a release in waves: its traffic target and its controller's settings. */
export interface RolloutWavesTarget extends DeployedTarget {
  /** The traffic this region's rollout moves. */
  readonly target: RolloutTarget;
  /** A role in another account the coordinator assumes there (see `WaveTargetProps.roleArn`). */
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

  constructor(scope: Construct, id: string, props: RolloutWavesProps) {
    super(scope, id);
    const { spec, home } = props;
    if (!spec.waves)
      throw new PropsError(`RolloutWaves("${id}")`, [`spec: rollout ${spec.name} has no waves`]);
    const resolved = resolveWaves(spec.waves, props.targets);
    if (resolved.problems.length > 0) {
      throw new PropsError(
        `RolloutWaves("${id}")`,
        resolved.problems.map((p) => `spec: ${p}`),
      );
    }
    this.homeStack = new Stack(this, "Home", { env: home });
    const stacks: Stack[] = [];
    const rollouts: Rollout[] = [];
    const targets: WaveTargetProps[] = props.targets.map((t) => ({
      region: t.region,
      ...(t.account !== undefined ? { account: t.account } : {}),
      ...(t.labels !== undefined ? { labels: t.labels } : {}),
      ...(t.roleArn !== undefined ? { roleArn: t.roleArn } : {}),
      stateMachineArn: "",
    }));
    for (const p of resolved.passes) {
      const account = p.target.account ?? home.account;
      const stack = new Stack(this, `Pass-${p.pass}`, { env: { account, region: p.target.region } });
      const controller = new RolloutController(stack, "Controller", p.target.controller ?? {});
      const name = `${spec.name}-${p.pass}`;
      rollouts.push(
        controller.addRollout("Rollout", {
          spec: passSpec(spec, p),
          target: p.target.target,
          trigger: {
            repository: ecr.Repository.fromRepositoryName(stack, "Repository", props.repository),
            pushRule: false,
          },
          stateMachineName: name,
        }),
      );
      stacks.push(stack);
      targets[p.index] = {
        ...(targets[p.index] as WaveTargetProps),
        stateMachineArn: `arn:${partitionOf(p.target.region)}:states:${p.target.region}:${account}:stateMachine:${name}`,
      };
    }
    this.regionStacks = stacks;
    this.rollouts = rollouts;
    this.coordinator = new WaveCoordinator(this.homeStack, "Coordinator", {
      spec,
      targets,
      stateMachineName: `${spec.name}-waves`,
    });
    const tagFilter = imageTagFilter(props.tagPattern);
    const onPush = (id: string, tagged: boolean) =>
      new events.Rule(this.homeStack, id, {
        description: `Starts the release of ${spec.name} in waves on a push${tagged ? "" : " by digest only"} to ${props.repository}`,
        eventPattern: {
          source: ["aws.ecr"],
          detailType: ["ECR Image Action"],
          detail: {
            "action-type": ["PUSH"],
            result: ["SUCCESS"],
            "repository-name": [props.repository],
            // A push by digest only has no image-tag: EventBridge fills a missing path with
            // nothing, so the tagged rule would give the revision the tag "".
            "image-tag": tagged ? (tagFilter ?? [{ exists: true }]) : [{ exists: false }],
          },
        },
      });
    const digest = events.EventField.fromPath("$.detail.image-digest");
    const suffix = home.region.startsWith("cn-") ? "amazonaws.com.cn" : "amazonaws.com";
    // The trigger's input (`RolloutExecutionInput`); a push through this rule is not numbered
    // (generation 1), the coordinator's execution name tells releases apart.
    const start = (tag: string | null) =>
      new eventTargets.SfnStateMachine(this.coordinator.stateMachine, {
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
    this.rule = onPush("OnPush", true);
    this.rule.addTarget(start(events.EventField.fromPath("$.detail.image-tag")));
    // Without a tag pattern every push starts a release, a push by digest only too: its revision has no tag.
    if (props.tagPattern === undefined) {
      this.digestRule = onPush("OnPushByDigest", false);
      this.digestRule.addTarget(start(null));
    }
  }
}
