import { Arn, ArnFormat, Names, RemovalPolicy, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as logs from "aws-cdk-lib/aws-logs";
import * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import {
  type DeployedTarget,
  formatProblem,
  type RolloutSpec,
  resolveWaves,
  SpecError,
} from "../statemachine/index.ts";
import { type CoordinatedPass, compileWaves, wavePlaceholders } from "../statemachine/waves-compile.ts";
import { acknowledgeStateMachineRole, acknowledgeWildcards } from "./nag.ts";
import { PropsError } from "./validate.ts";

/** One target of a release in waves: a region (and account) whose controller runs the pass's rollout. */
export interface WaveTargetProps extends DeployedTarget {
  /** The pass's rollout state machine in that region and account (a `Rollout`'s `stateMachine.stateMachineArn`). */
  readonly stateMachineArn: string;
  /**
   * A role in the target's account that the coordinator assumes to start and read the pass's
   * executions there (its trust policy names the coordinator's role). Required when `account` is
   * not the coordinator's: this construct lives in the home account and cannot create it there
   * (`RolloutWaves` does, in the pass's stack, when none is given).
   * @default none: the target is in the coordinator's account
   */
  readonly roleArn?: string;
}

export interface WaveCoordinatorProps {
  /** The release: a spec with `waves` (its steps are what each pass runs, through its own controller). */
  readonly spec: RolloutSpec;
  /** The deployment's targets, matched against the spec's waves (`resolveWaves`). */
  readonly targets: readonly WaveTargetProps[];
  /** @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /** @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * The coordinator's name, so its ARN is known without a reference (`RolloutWaves`).
   * @default a name CloudFormation generates
   */
  readonly stateMachineName?: string;
  /**
   * The name of the coordinator's role, so a role in another account can trust it by ARN before
   * it exists (`RolloutWaves`).
   * @default a name CloudFormation generates
   */
  readonly roleName?: string;
}

/** The rule Step Functions manages to learn when a `.sync` child execution ends. */
const SYNC_RULE = "StepFunctionsGetEventsForStepFunctionsExecutionRule";

/**
 * The wave coordinator of a release in waves, in the home region: a Standard state machine
 * compiled by `compileWaves` that starts each pass's rollout (`startExecution.sync:2`) in its
 * region and account, bakes between waves and rolls back per `onFailure`. Its role may start
 * exactly the passes' state machines, read and stop their executions, manage the rule `.sync`
 * needs, and assume the cross-account roles it is given — nothing more.
 */
export class WaveCoordinator extends Construct {
  readonly stateMachine: sfn.StateMachine;
  readonly passes: readonly CoordinatedPass[];

  constructor(scope: Construct, id: string, props: WaveCoordinatorProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.passes = coordinatedPasses(id, stack, props);
    const definition = compileCoordinator(id, props.spec, this.passes);
    const logGroup = new logs.LogGroup(this, "Logs", {
      logGroupName: `/aws/vendedlogs/states/${Names.uniqueResourceName(this, { maxLength: 200, separator: "-" })}`,
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    const role =
      props.roleName === undefined
        ? undefined
        : new iam.Role(this, "Role", {
            roleName: props.roleName,
            assumedBy: new iam.ServicePrincipal("states.amazonaws.com"),
            description: `The wave coordinator of ${props.spec.name}`,
          });
    this.stateMachine = new sfn.StateMachine(this, "StateMachine", {
      ...(props.stateMachineName !== undefined ? { stateMachineName: props.stateMachineName } : {}),
      ...(role ? { role } : {}),
      comment: definition.Comment,
      stateMachineType: sfn.StateMachineType.STANDARD,
      definitionBody: sfn.DefinitionBody.fromString(JSON.stringify(definition)),
      definitionSubstitutions: Object.fromEntries(
        this.passes.flatMap((p, i) => {
          const names = wavePlaceholders(i + 1);
          const target = props.targets[p.index] as WaveTargetProps;
          return [
            [names.stateMachineArn, target.stateMachineArn],
            ...(target.roleArn ? [[names.roleArn, target.roleArn]] : []),
          ];
        }),
      ),
      logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: true },
      tracingEnabled: true,
    });
    acknowledgeStateMachineRole(this.stateMachine);
    this.#grantPasses(stack, props.targets);
  }

  /**
   * The coordinator's role may start exactly the passes' state machines in its own account, read
   * and stop their executions, assume the roles of the passes in other accounts, and manage the
   * rule `.sync` needs: nothing more.
   */
  #grantPasses(stack: Stack, targets: readonly WaveTargetProps[]): void {
    const targetOf = (p: CoordinatedPass) => targets[p.index] as WaveTargetProps;
    const local = this.passes.filter((p) => !p.target.crossAccount).map(targetOf);
    const executions = local.map((t) => executionsOf(stack, t.stateMachineArn));
    if (local.length > 0) {
      this.stateMachine.addToRolePolicy(
        new iam.PolicyStatement({
          sid: "StartPasses",
          actions: ["states:StartExecution"],
          resources: local.map((t) => t.stateMachineArn),
        }),
      );
      this.stateMachine.addToRolePolicy(
        new iam.PolicyStatement({
          sid: "FollowPasses",
          actions: ["states:DescribeExecution", "states:StopExecution"],
          resources: executions,
        }),
      );
    }
    const roles = [...new Set(this.passes.flatMap((p) => targetOf(p).roleArn ?? []))];
    if (roles.length > 0) {
      this.stateMachine.addToRolePolicy(
        new iam.PolicyStatement({ sid: "AssumePassRoles", actions: ["sts:AssumeRole"], resources: roles }),
      );
    }
    this.stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        sid: "SyncRule",
        actions: ["events:PutTargets", "events:PutRule", "events:DescribeRule"],
        resources: [stack.formatArn({ service: "events", resource: "rule", resourceName: SYNC_RULE })],
      }),
    );
    acknowledgeWildcards(
      this.stateMachine.role,
      executions,
      "the coordinator reads and stops the executions it starts in each pass's state machine, named after each release",
    );
  }

  /**
   * Lets a person's role run `rollouts waves` and `rollouts get`'s "Waves:" against this release:
   * read the coordinator's definition and list its executions, and find it by name
   * (`ListStateMachines`, which has no resource-level permission). Each pass's region needs the
   * controller's `grantOperate` (its table and the state machine's tag).
   */
  grantRead(grantee: iam.IGrantable): iam.Grant {
    const grant = iam.Grant.addToPrincipal({
      grantee,
      actions: ["states:DescribeStateMachine", "states:ListExecutions"],
      resourceArns: [this.stateMachine.stateMachineArn],
    });
    iam.Grant.addToPrincipal({ grantee, actions: ["states:ListStateMachines"], resourceArns: ["*"] });
    const principal = grantee.grantPrincipal;
    const policy = Construct.isConstruct(principal)
      ? principal.node.tryFindChild("DefaultPolicy")
      : undefined;
    if (policy) {
      acknowledgeWildcards(
        policy,
        ["*"],
        "states:ListStateMachines has no resource-level permissions: the CLI finds the coordinator <rollout>-waves by name",
      );
    }
    return grant;
  }
}

/**
 * The release's passes, its waves matched against the targets, each marked cross-account when the
 * coordinator reaches it through a role. A spec without waves, a mismatch, or a target in another
 * account without a role is refused, every problem at once.
 */
function coordinatedPasses(id: string, stack: Stack, props: WaveCoordinatorProps): CoordinatedPass[] {
  const problems: string[] = [];
  if (!props.spec.waves) problems.push(`spec: rollout ${props.spec.name} has no waves`);
  props.targets.forEach((t, i) => {
    const foreign = t.account !== undefined && t.account !== stack.account;
    if (foreign && t.roleArn === undefined) {
      problems.push(
        `targets[${i}].roleArn: required: ${t.account}/${t.region} is another account, whose executions the coordinator starts through a role there`,
      );
    }
  });
  const resolved = props.spec.waves ? resolveWaves(props.spec.waves, props.targets) : undefined;
  problems.push(...(resolved?.problems.map((p) => `spec: ${p}`) ?? []));
  if (problems.length > 0 || !resolved) throw new PropsError(`WaveCoordinator("${id}")`, problems);
  return resolved.passes.map((p) => ({
    ...p,
    target: { ...p.target, crossAccount: p.target.roleArn !== undefined },
  }));
}

/** The coordinator's definition; what the compiler refuses in the spec is a props error naming the construct. */
function compileCoordinator(
  id: string,
  spec: RolloutSpec,
  passes: readonly CoordinatedPass[],
): ReturnType<typeof compileWaves> {
  try {
    return compileWaves(spec, passes);
  } catch (error) {
    if (!(error instanceof SpecError)) throw error;
    throw new PropsError(
      `WaveCoordinator("${id}")`,
      error.problems.map((p) => `spec: ${formatProblem(p)}`),
    );
  }
}

/** `arn:aws:states:<region>:<account>:execution:<state machine name>:*` of a state machine's ARN. */
function executionsOf(stack: Stack, stateMachineArn: string): string {
  const parts = Arn.split(stateMachineArn, ArnFormat.COLON_RESOURCE_NAME);
  return stack.formatArn({
    service: "states",
    resource: "execution",
    resourceName: `${parts.resourceName}:*`,
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    ...(parts.region !== undefined ? { region: parts.region } : {}),
    ...(parts.account !== undefined ? { account: parts.account } : {}),
  });
}
