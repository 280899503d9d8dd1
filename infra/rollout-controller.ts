import { Annotations, ArnFormat, Lazy, Names, RemovalPolicy, Stack, Tags, Token } from "aws-cdk-lib";
import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as events from "aws-cdk-lib/aws-events";
import * as eventTargets from "aws-cdk-lib/aws-events-targets";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as nodejs from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import * as scheduler from "aws-cdk-lib/aws-scheduler";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import {
  ENV,
  HANDLERS,
  type HandlerName,
  MODEL_PACKAGE_DETAIL_TYPE,
  modelPackageRoute,
  TABLE_TAG,
} from "../functions/config.ts";
import { TABLE } from "../functions/store/keys.ts";
import { readinessChecksFor, targetSpecProblems } from "../functions/traffic/settings.ts";
import { FUNCTION_PLACEHOLDERS, type FunctionRole } from "../statemachine/compile.ts";
import {
  alarmNameOf,
  compile,
  formatProblem,
  type RolloutSpec,
  SpecError,
  type StateMachineDefinition,
} from "../statemachine/index.ts";
import { mergeCatalogs } from "../statemachine/notification-catalog.ts";
import { NotificationSubscriptionSchema } from "../statemachine/notifications.ts";
import { MODEL_ROUTER_URL } from "../statemachine/providers.ts";
import { rolloutDashboard } from "./dashboard.ts";
import { type DeadLetters, deadLetters, onAsyncFailure, redeliverAsyncFailures } from "./dead-letters.ts";
import {
  BUNDLING,
  FUNCTION_DEFAULTS,
  FUNCTION_NEEDS,
  handlerEntry,
  type Need,
  PROJECT_ROOT,
  prebuiltBundle,
} from "./functions.ts";
import { kubernetesAccessEntries, kubernetesVpc } from "./kubernetes.ts";
import {
  metricSecretsEnvironment,
  metricSecretsProblems,
  metricSecretsStatements,
} from "./metric-secrets.ts";
import {
  grantRouterReads,
  type ModelRouterResources,
  modelRouter,
  readsModelRouter,
  withModelRouterUrl,
} from "./model-router.ts";
import { acknowledge, acknowledgeStateMachineRole, acknowledgeWildcards } from "./nag.ts";
import { Notifications, notificationsProblems, subscriptionProblems } from "./notifications.ts";
import { EMBEDDED_CONTEXT, type RolloutControllerProps, type RolloutOptions } from "./props.ts";
import {
  alarmArns,
  alarmProblems,
  alarmRule,
  hookFunctions,
  mergedAlarms,
  metricFunctions,
  validateAlarmNames,
} from "./safety.ts";
import { rolloutTable } from "./table.ts";
import { ecrPushPattern, imageTagFilter } from "./tag-pattern.ts";
import { targetGrants } from "./target-grants.ts";
import { schedulerRole, type TimerNames, tickerStateMachine, timerNames } from "./timer.ts";
import {
  assumedRoleArns,
  budgetedSpec,
  controllerProblems,
  PropsError,
  parseWorkspace,
  resolveSpec,
  resolveTarget,
  triggerProblems,
  usesCloudWatch,
  usesJob,
} from "./validate.ts";

/** What `addRollout` created for one service. */
export interface Rollout {
  /** The rollout's name (from the spec): the key of its items in the table. */
  readonly name: string;
  readonly spec: RolloutSpec;
  /** The Standard workflow compiled from the spec, one state per step. */
  readonly stateMachine: sfn.StateMachine;
  /**
   * `aws.ecr` / `ECR Image Action` PUSH SUCCESS on the repository → the trigger function; absent
   * with `trigger.pushRule: false`.
   */
  readonly rule: events.Rule | undefined;
  readonly logGroup: logs.LogGroup;
  readonly dashboard: cloudwatch.Dashboard;
  /** Any failed execution (an aborted rollout fails its execution with `RolloutAborted`). */
  readonly failedExecutionsAlarm: cloudwatch.Alarm;
  /** One rule per subscribed trigger and service: this rollout's lifecycle event → the service. */
  readonly notificationRules: readonly events.Rule[];
  /** With alarms: `CloudWatch Alarm State Change` to ALARM of one of them → the abort channel. */
  readonly alarmRule?: events.Rule;
  /** With a target's `router: {type: model}`: the router function, its Function URL and the URL's output. */
  readonly modelRouter?: ModelRouterResources;
}

/** The functions every rollout shares, by handler. */
export type RolloutFunctions = Readonly<Record<HandlerName, lambda.Function>>;

interface Route {
  readonly rollout: string;
  readonly stateMachineArn: string;
  readonly repository: string;
  readonly tags?: string[];
  readonly alarms?: string[];
}

/**
 * Progressive delivery for many services from one set of shared parts (docs/architecture.md,
 * "One controller, many rollouts"): the table, the handler functions, the Timer (Scheduler group and
 * ticker) and the event bus wiring live here once; `addRollout` adds one state machine and one
 * ECR rule per service. Every grant is the narrowest the handlers' calls allow, and each wildcard
 * that remains is acknowledged for cdk-nag with its reason.
 */
export class RolloutController extends Construct {
  /** Rollout items, analysis runs and measurements (one partition per rollout). */
  readonly table: dynamodb.Table;
  readonly functions: RolloutFunctions;
  /** Sub-minute delays: `{seconds, payload}` → Wait → invoke resume with `payload`. */
  readonly tickerStateMachine: sfn.StateMachine;
  /** The EventBridge Scheduler group holding the one-time `at()` schedules. */
  readonly scheduleGroupName: string;
  /** The role EventBridge Scheduler assumes to invoke the resume function (and nothing else). */
  readonly schedulerRole: iam.Role;
  /** Where the lifecycle events go. */
  readonly eventBus: events.IEventBus;
  /**
   * Timer firings lost after every retry: Scheduler's (`DeadLetterConfig` of each schedule), the
   * ticker's (its Catch) and the redelivery queue's (its redrive policy). Each message is a
   * rollout step that did not happen.
   */
  readonly timerDeadLetters: DeadLetters;
  /**
   * The resume function's on-failure destination: firings it failed on every asynchronous
   * attempt, handed back to it by an SQS event source before they go to `timerDeadLetters`.
   */
  readonly timerRedelivery: sqs.Queue;
  /** ECR push events the trigger function could not take after the rules' retries. */
  readonly triggerDeadLetters: DeadLetters;
  /** The notification services and their dead letters, when `notifications` is given. */
  readonly notifications: Notifications | undefined;

  readonly #rollouts = new Map<string, Rollout>();
  readonly #routes: Route[] = [];
  readonly #roles = {} as Record<HandlerName, iam.Role>;
  readonly #operators: iam.Policy[] = [];
  readonly #props: RolloutControllerProps;
  readonly #logRetention: logs.RetentionDays;
  readonly #removalPolicy: RemovalPolicy;
  #cloudWatchPolicy: iam.Policy | undefined;
  /** Kubernetes: the clusters with access entries already, and the VPC the target functions are in. */
  readonly #kubernetes = { clusters: new Set<string>(), vpc: {} as { vpcId?: string } };

  constructor(scope: Construct, id: string, props: RolloutControllerProps = {}) {
    super(scope, id);
    const problems = controllerProblems(props);
    if (props.notifications)
      problems.push(
        ...notificationsProblems(props.notifications, this.node.tryGetContext(EMBEDDED_CONTEXT) === true),
      );
    if (problems.length > 0) throw new PropsError(`RolloutController ${this.node.path}`, problems);
    this.#props = props;
    this.#logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    this.#removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    this.eventBus = props.eventBus ?? events.EventBus.fromEventBusName(this, "DefaultBus", "default");
    this.table = rolloutTable(this, props, this.#removalPolicy);
    this.timerDeadLetters = deadLetters(this, "TimerDeadLetters", {
      what: "Timer firings (a pause's end, an analysis tick, a scale-down, a continued abort)",
      removalPolicy: this.#removalPolicy,
    });
    this.triggerDeadLetters = deadLetters(this, "TriggerDeadLetters", {
      what: "ECR push events for the trigger",
      removalPolicy: this.#removalPolicy,
    });

    const timer = timerNames(this);
    this.scheduleGroupName = timer.scheduleGroupName;
    const scheduleGroup = new scheduler.CfnScheduleGroup(this, "ScheduleGroup", {
      name: this.scheduleGroupName,
    });
    this.schedulerRole = schedulerRole(this, timer, this.timerDeadLetters.queue);

    this.functions = this.#createFunctions(timer, scheduleGroup);
    // What resume throws after Lambda's async retries is handed to it again from a queue, and
    // then goes where Scheduler and the ticker put what they could not deliver; what trigger
    // throws goes to the same queue as what the push rules could not deliver.
    this.timerRedelivery = redeliverAsyncFailures(this, "TimerRedelivery", {
      fn: this.functions.resume,
      role: this.#roles.resume,
      deadLetters: this.timerDeadLetters.queue,
      removalPolicy: this.#removalPolicy,
    });
    onAsyncFailure(this.functions.trigger, this.#roles.trigger, this.triggerDeadLetters.queue);
    this.tickerStateMachine = tickerStateMachine(this, {
      name: timer.tickerName,
      resume: this.functions.resume,
      deadLetters: this.timerDeadLetters.queue,
      logRetention: this.#logRetention,
      removalPolicy: this.#removalPolicy,
    });
    this.notifications = props.notifications
      ? new Notifications(this, "Notifications", {
          props: props.notifications,
          eventBus: this.eventBus,
          removalPolicy: this.#removalPolicy,
        })
      : undefined;
    this.#validateRoutesSize();
    if (props.cloudWatchMetrics === true) this.#grantCloudWatch();
  }

  /** One function per handler, each with its own role and log group, the shared environment and grants. */
  #createFunctions(timer: TimerNames, scheduleGroup: scheduler.CfnScheduleGroup): RolloutFunctions {
    const stack = Stack.of(this);
    const prometheus = this.#prometheus();
    const environment: Record<string, string> = {
      [ENV.tableName]: this.table.tableName,
      [ENV.eventBusName]: this.eventBus.eventBusName,
      [ENV.scheduleGroup]: this.scheduleGroupName,
      [ENV.schedulerRoleArn]: this.schedulerRole.roleArn,
      [ENV.resumeFunctionArn]: timer.resumeArn,
      [ENV.tickerStateMachineArn]: timer.tickerArn,
      ...(prometheus ? { [ENV.prometheusUrl]: prometheus.url } : {}),
      ...(prometheus?.region ? { [ENV.prometheusSigv4Region]: prometheus.region } : {}),
      NODE_OPTIONS: "--enable-source-maps",
      // Powertools' logger, tracer and metrics (functions/observability/); the log level is INFO in
      // a Lambda unless POWERTOOLS_LOG_LEVEL is set on the function.
      POWERTOOLS_SERVICE_NAME: "sfn-rollouts",
    };

    const functions = {} as Record<HandlerName, lambda.Function>;
    for (const name of Object.keys(HANDLERS) as HandlerName[]) {
      const id = pascal(HANDLERS[name]);
      const role = new iam.Role(this, `${id}Role`, {
        description: `sfn-rollouts ${HANDLERS[name]} function`,
        assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
      });
      const logGroup = new logs.LogGroup(this, `${id}Logs`, {
        retention: this.#logRetention,
        removalPolicy: this.#removalPolicy,
      });
      logGroup.grantWrite(role);
      const settings: lambda.FunctionOptions = {
        ...FUNCTION_DEFAULTS,
        description: `sfn-rollouts: ${HANDLERS[name]}`,
        role,
        logGroup,
        environment:
          name === "trigger"
            ? {
                ...environment,
                [ENV.rollouts]: Lazy.string({ produce: () => stack.toJsonString(this.#routes) }),
              }
            : {
                ...environment,
                ...(FUNCTION_NEEDS[name].includes("timer")
                  ? { [ENV.timerDeadLetterArn]: this.timerDeadLetters.queue.queueArn }
                  : {}),
                ...(FUNCTION_NEEDS[name].includes("metrics")
                  ? metricSecretsEnvironment(this, this.#props.metricSecrets)
                  : {}),
              },
        ...(name === "resume" ? { functionName: timer.resumeName } : {}),
      };
      // The installed package deploys the bundles `npm run build` made; the sources bundle here.
      const prebuilt = prebuiltBundle(name);
      functions[name] = prebuilt
        ? new lambda.Function(this, id, {
            ...settings,
            runtime: FUNCTION_DEFAULTS.runtime,
            code: lambda.Code.fromAsset(prebuilt),
            handler: "index.handler",
          })
        : new nodejs.NodejsFunction(this, id, {
            ...settings,
            entry: handlerEntry(name),
            handler: "handler",
            projectRoot: PROJECT_ROOT,
            depsLockFilePath: `${PROJECT_ROOT.replace(/\/$/, "")}/package-lock.json`,
            bundling: BUNDLING,
          });
      acknowledge(
        functions[name],
        "AwsSolutions-L1",
        "Node.js 22 is the Lambda runtime the project deploys on; the bundle targets node20 so that the same code also runs in the embedded runtime on Node 20",
      );
      this.#roles[name] = role;
      this.#grantShared(name, role, {
        schedules: timer.schedules,
        tickerArn: timer.tickerArn,
        prometheus,
      });
      if (FUNCTION_NEEDS[name].includes("timer")) functions[name].node.addDependency(scheduleGroup);
    }
    return functions;
  }

  /** Lambda's environment is limited to 4 KB in all: the trigger's routes grow with every rollout. */
  #validateRoutesSize(): void {
    this.node.addValidation({
      validate: () => {
        const size = JSON.stringify(
          this.#routes.map((r) => ({ ...r, stateMachineArn: "x".repeat(128) })),
        ).length;
        return size > 3000
          ? [
              `${this.#routes.length} rollouts make the trigger's ${ENV.rollouts} about ${size} bytes, too close to Lambda's 4 KB environment limit: split them over two controllers`,
            ]
          : [];
      },
    });
  }

  /** Every rollout added so far, by the id given to `addRollout`. */
  get rollouts(): ReadonlyMap<string, Rollout> {
    return this.#rollouts;
  }

  /**
   * Adds one service's rollout: its Standard state machine (compiled from the spec, the target's
   * settings embedded in the Tasks), the ECR rule that starts it through the trigger, its
   * dashboard and alarm, and the target's IAM for the functions that move traffic. Every bad
   * option is reported in one error.
   */
  addRollout(id: string, options: RolloutOptions): Rollout {
    const { spec, definition } = this.#resolveRollout(id, options);
    const { repository } = options.trigger;
    const scope = new Construct(this, id);
    const logGroup = new logs.LogGroup(scope, "Logs", {
      logGroupName: `/aws/vendedlogs/states/${Names.uniqueResourceName(scope, { maxLength: 200, separator: "-" })}`,
      retention: this.#logRetention,
      removalPolicy: this.#removalPolicy,
    });
    const router = this.#modelRouter(scope, spec, options);
    const stateMachine = this.#rolloutStateMachine(
      scope,
      this.#fillModelRouter(id, definition, router),
      logGroup,
      options.stateMachineName,
    );
    const executions = executionsOf(stateMachine);
    this.#grantTrigger(stateMachine, executions);
    this.#grantTarget(scope, options, stateMachine, usesJob(spec));
    if (usesCloudWatch(spec)) this.#grantCloudWatch();
    this.#grantAssumeRoles(scope, assumedRoleArns(spec, []));
    const rule = options.trigger.pushRule === false ? undefined : this.#pushRule(scope, spec, options);
    const onAlarm = this.#guard(scope, spec);
    this.#modelPackageRule(scope, spec, options, stateMachine.stateMachineArn);
    this.#routes.push({
      rollout: spec.name,
      stateMachineArn: stateMachine.stateMachineArn,
      repository: repository.repositoryName,
      ...(options.trigger.tagPattern !== undefined && options.trigger.tagPattern !== "*"
        ? { tags: [options.trigger.tagPattern] }
        : {}),
      ...(spec.rollbackCooldown ? { cooldown: spec.rollbackCooldown } : {}),
      ...(spec.alarms
        ? { alarms: spec.alarms.map((a) => (Token.isUnresolved(a) ? a : alarmNameOf(a))) }
        : {}),
    });

    const { dashboard, alarm } = rolloutDashboard(scope, spec.name, stateMachine, {
      logGroup,
      ...(this.notifications?.alarmTopic ? { alarmTopic: this.notifications.alarmTopic } : {}),
    });
    const notificationRules =
      this.notifications?.subscribe(
        scope,
        spec.name,
        stateMachine,
        [
          ...(spec.notifications ?? []),
          ...(options.notifications ?? []).map((s) => NotificationSubscriptionSchema.parse(s)),
        ],
        spec.notificationCatalog,
      ) ?? [];
    for (const policy of this.#operators) this.#operateOn(policy, stateMachine, executions);

    const rollout: Rollout = {
      name: spec.name,
      spec,
      stateMachine,
      rule,
      logGroup,
      dashboard,
      failedExecutionsAlarm: alarm,
      notificationRules,
      ...(onAlarm ? { alarmRule: onAlarm } : {}),
      ...(router ? { modelRouter: router } : {}),
    };
    this.#rollouts.set(id, rollout);
    return rollout;
  }

  /** The spec, the target's settings and the compiled definition; every bad option in one error. */
  #resolveRollout(
    id: string,
    options: RolloutOptions,
  ): { spec: RolloutSpec; target: ReturnType<typeof resolveTarget>; definition: StateMachineDefinition } {
    const resolved = resolveSpec(options.spec);
    const { problems } = resolved;
    const budgeted = resolved.spec ? budgetedSpec(resolved.spec, options.errorBudget, problems) : undefined;
    const alarms = budgeted ? mergedAlarms(budgeted, options) : [];
    const alarmed = budgeted && alarms.length > 0 ? { ...budgeted, alarms } : budgeted;
    const catalog = mergeCatalogs(this.notifications?.catalog, alarmed?.notificationCatalog);
    const spec = alarmed && catalog ? { ...alarmed, notificationCatalog: catalog } : alarmed;
    if (alarms.length > 0) problems.push(...alarmProblems(this, options, alarms));
    const target = resolveTarget(options.target, this.node.tryGetContext(EMBEDDED_CONTEXT) === true);
    problems.push(...target.problems, ...triggerProblems(options));
    if (spec) problems.push(...targetSpecProblems(target.settings.type, spec).map((p) => `target: ${p}`));
    if (!/^[A-Za-z][A-Za-z0-9]*$/.test(id))
      problems.push(`id: "${id}" must be letters and digits (a construct id)`);
    if (spec && [...this.#rollouts.values()].some((r) => r.name === spec.name)) {
      problems.push(
        `spec.name: a rollout named "${spec.name}" was already added (the table keys items by name)`,
      );
    }
    if (spec && usesCloudWatch(spec) && this.#props.cloudWatchMetrics === false) {
      problems.push(
        "spec: an analysis uses the cloudWatch provider but the controller has cloudWatchMetrics: false",
      );
    }
    if (spec) problems.push(...metricSecretsProblems(spec, this.#props.metricSecrets));
    if (spec) assumedRoleArns(spec, problems);
    (spec?.notifications ?? []).forEach((s, i) => {
      problems.push(...subscriptionProblems(s, this.#props.notifications, `spec.notifications[${i}]`));
    });
    (options.notifications ?? []).forEach((s, i) => {
      problems.push(...subscriptionProblems(s, this.#props.notifications, `notifications[${i}]`));
    });
    if (problems.length > 0 || !spec) throw new PropsError(`RolloutController.addRollout("${id}")`, problems);
    try {
      const kubernetes = options.target.type === "kubernetes";
      const definition = compile(spec, {
        // The rollout's pods and surge are the spec's (Argo's replicas and maxSurge), unless given.
        target: kubernetes
          ? { replicas: spec.replicas, maxSurge: spec.maxSurge, ...target.settings }
          : target.settings,
        // An ECS deployment, pods and a SageMaker endpoint update settle after each traffic step.
        readinessChecks: readinessChecksFor(options.target.type),
      });
      return { spec, target, definition };
    } catch (error) {
      if (!(error instanceof SpecError)) throw error;
      throw new PropsError(
        `RolloutController.addRollout("${id}")`,
        error.problems.map((p) => `spec: ${formatProblem(p)}`),
      );
    }
  }

  /** The rollout's Standard state machine: the compiled definition with the functions' ARNs. */
  #rolloutStateMachine(
    scope: Construct,
    definition: StateMachineDefinition,
    logGroup: logs.LogGroup,
    stateMachineName?: string,
  ): sfn.StateMachine {
    const invoked = (Object.keys(FUNCTION_PLACEHOLDERS) as FunctionRole[]).map(
      (role) => this.functions[role],
    );
    const stateMachine = new sfn.StateMachine(scope, "StateMachine", {
      ...(stateMachineName !== undefined ? { stateMachineName } : {}),
      comment: definition.Comment,
      stateMachineType: sfn.StateMachineType.STANDARD,
      definitionBody: sfn.DefinitionBody.fromString(JSON.stringify(definition)),
      definitionSubstitutions: Object.fromEntries(
        (Object.keys(FUNCTION_PLACEHOLDERS) as FunctionRole[]).map((role) => [
          FUNCTION_PLACEHOLDERS[role],
          this.functions[role].functionArn,
        ]),
      ),
      logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: true },
      tracingEnabled: true,
    });
    stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        sid: "InvokeStepFunctions",
        actions: ["lambda:InvokeFunction"],
        resources: invoked.map((f) => f.functionArn),
      }),
    );
    acknowledgeStateMachineRole(stateMachine);
    // The table whose item this state machine drives, so `rollouts waves` finds it from the ARN.
    Tags.of(stateMachine).add(TABLE_TAG, this.table.tableName);
    return stateMachine;
  }

  /**
   * Alarm rollback and hooks: the alarm rule into the trigger (the abort channel), the names the
   * app can check, `cloudwatch:DescribeAlarms` on exactly the rollout's alarms for the step
   * boundaries' check, and `lambda:InvokeFunction` on exactly its hook functions.
   */
  #guard(scope: Construct, spec: RolloutSpec): events.Rule | undefined {
    const measured = metricFunctions(scope, spec);
    if (measured.length > 0) {
      for (const name of ["startAnalysis", "resume"] as const) {
        this.#roles[name].addToPrincipalPolicy(
          new iam.PolicyStatement({ actions: ["lambda:InvokeFunction"], resources: measured }),
        );
      }
    }
    const hooks = hookFunctions(spec);
    if (hooks.length > 0) {
      this.#roles.hook.addToPrincipalPolicy(
        new iam.PolicyStatement({ actions: ["lambda:InvokeFunction"], resources: hooks }),
      );
    }
    const alarms = spec.alarms ?? [];
    if (alarms.length === 0) return undefined;
    validateAlarmNames(scope, alarms, spec.ignorePollAlarmFailure ?? false);
    this.#roles.checkAlarms.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["cloudwatch:DescribeAlarms"],
        resources: alarmArns(scope, alarms),
      }),
    );
    const rule = alarmRule(scope, spec.name, alarms);
    rule.addTarget(
      new eventTargets.LambdaFunction(this.functions.trigger, {
        retryAttempts: 8,
        deadLetterQueue: this.triggerDeadLetters.queue,
      }),
    );
    return rule;
  }

  /** The trigger starts this rollout's executions, and reads and stops them (supersede). */
  #grantTrigger(stateMachine: sfn.StateMachine, executions: string): void {
    const triggerRole = this.#roles.trigger;
    triggerRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["states:StartExecution"],
        resources: [stateMachine.stateMachineArn],
      }),
    );
    triggerRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["states:DescribeExecution", "states:StopExecution"],
        resources: [executions],
      }),
    );
    acknowledgeWildcards(
      triggerRole,
      [executions],
      "the trigger reads and stops this rollout's executions, whose names derive from each push",
    );
  }

  /** The target's IAM, in its own policy so its acknowledgements say exactly what they cover. */
  #grantTarget(
    scope: Construct,
    options: RolloutOptions,
    stateMachine: sfn.StateMachine,
    jobs: boolean,
  ): void {
    const grants = targetGrants(scope, options.target, options.trigger.repository);
    // A job metric's Jobs are created in the kubernetes target's cluster by the measuring
    // functions: startAnalysis (its first measurement) reaches it as resume does.
    const movers = (Object.keys(FUNCTION_NEEDS) as HandlerName[]).filter(
      (n) =>
        FUNCTION_NEEDS[n].includes("target") ||
        (jobs && options.target.type === "kubernetes" && FUNCTION_NEEDS[n].includes("metrics")),
    );
    // One policy per set of functions that call its statements: `TargetPolicy` for every function
    // that moves traffic, `TargetPolicy<Begin…>` for a statement only some of them call.
    const groups = new Map<string, { handlers: readonly HandlerName[]; statements: iam.PolicyStatement[] }>();
    for (const statement of grants.statements) {
      const handlers = movers.filter((n) => (grants.callers?.get(statement) ?? movers).includes(n));
      const key =
        handlers.length === movers.length
          ? ""
          : handlers.map((n) => n[0]?.toUpperCase() + n.slice(1)).join("");
      const group = groups.get(key) ?? { handlers, statements: [] };
      group.statements.push(statement);
      groups.set(key, group);
    }
    for (const [key, group] of groups) {
      const targetPolicy = new iam.Policy(scope, `TargetPolicy${key}`, {
        statements: group.statements,
        roles: group.handlers.map((n) => this.#roles[n]),
      });
      const resources = new Set(group.statements.flatMap((s) => s.resources));
      for (const w of grants.wildcards) {
        if (resources.has(w.resource)) acknowledgeWildcards(targetPolicy, [w.resource], w.reason);
      }
      // The workflow moves traffic from its first state: the target's policies must exist before it.
      stateMachine.node.addDependency(targetPolicy);
      // A function in a VPC needs its network interface permissions before it is created.
      if (options.target.type === "kubernetes" && options.target.vpc) {
        for (const n of group.handlers) this.functions[n].node.addDependency(targetPolicy);
      }
    }
    if (options.target.type === "kubernetes") {
      const entries = kubernetesAccessEntries(
        scope,
        options.target,
        movers.map((n) => this.#roles[n]),
        this.#kubernetes.clusters,
      );
      for (const entry of entries) stateMachine.node.addDependency(entry);
      const problem = kubernetesVpc(
        scope,
        options.target,
        movers.map((n) => this.functions[n]),
        this.#kubernetes.vpc,
      );
      if (problem) throw new PropsError(`RolloutController.addRollout("${scope.node.id}")`, [problem]);
    }
    if (options.target.type === "alb-ecs" && (options.target.passRoles ?? []).length === 0) {
      Annotations.of(scope).addWarningV2(
        "sfn-rollouts:passRoles",
        "target.passRoles is empty: RegisterTaskDefinition fails if the task definition names a task or execution role",
      );
    }
  }

  /**
   * The measuring functions allowed to read the model router's URL, and the definition with that
   * URL where the spec says `{{rollout.modelRouter}}`; a spec that says it without a router is refused.
   */
  #fillModelRouter(
    id: string,
    definition: StateMachineDefinition,
    router: ModelRouterResources | undefined,
  ): StateMachineDefinition {
    if (router) {
      grantRouterReads(
        router,
        (Object.keys(FUNCTION_NEEDS) as HandlerName[])
          .filter((n) => FUNCTION_NEEDS[n].includes("metrics"))
          .map((n) => this.#roles[n]),
      );
    }
    if (!readsModelRouter(definition)) return definition;
    if (!router) {
      throw new PropsError(`RolloutController.addRollout("${id}")`, [
        `spec: a samples address is ${MODEL_ROUTER_URL}, but the rollout has no model router (a sagemaker target with router: {type: model})`,
      ]);
    }
    return withModelRouterUrl(definition, router.url);
  }

  /** The router function and its Function URL, for a SageMaker target that asks for a model router. */
  #modelRouter(
    scope: Construct,
    spec: RolloutSpec,
    options: RolloutOptions,
  ): ModelRouterResources | undefined {
    const target = options.target;
    if (target.type !== "sagemaker" || target.router === undefined) {
      if (options.modelRouter !== undefined) {
        throw new PropsError(`RolloutController.addRollout("${scope.node.id}")`, [
          "modelRouter: the target has no router: {type: model} (the router is deployed for a sagemaker target with one)",
        ]);
      }
      return undefined;
    }
    const tableKey = this.#kmsStatement();
    return modelRouter(scope, {
      rollout: spec.name,
      routerName: target.endpointName,
      endpointName: target.endpointName,
      table: this.table,
      ...(tableKey ? { tableKey } : {}),
      logRetention: this.#logRetention,
      removalPolicy: this.#removalPolicy,
      ...(options.modelRouter?.authType ? { authType: options.modelRouter.authType } : {}),
    });
  }

  /** `aws.ecr` / `ECR Image Action` PUSH SUCCESS on the repository (and tag pattern) → the trigger. */
  #pushRule(scope: Construct, spec: RolloutSpec, options: RolloutOptions): events.Rule {
    const { repository, tagPattern } = options.trigger;
    const rule = new events.Rule(scope, "OnPush", {
      description: `Starts rollout ${spec.name} on a push to ${repository.repositoryName}`,
      eventPattern: ecrPushPattern(repository.repositoryName, imageTagFilter(tagPattern)),
    });
    rule.addTarget(
      new eventTargets.LambdaFunction(this.functions.trigger, {
        retryAttempts: 8,
        deadLetterQueue: this.triggerDeadLetters.queue,
      }),
    );
    return rule;
  }

  /**
   * A SageMaker target with a `modelPackageGroupName`: a version approved in that group of the
   * Model Registry (`SageMaker Model Package State Change`, `ModelApprovalStatus` Approved) starts
   * the rollout through the trigger too, with the package as the revision.
   */
  #modelPackageRule(
    scope: Construct,
    spec: RolloutSpec,
    options: RolloutOptions,
    stateMachineArn: string,
  ): void {
    const target = options.target;
    if (target.type !== "sagemaker" || target.modelPackageGroupName === undefined) return;
    const group = target.modelPackageGroupName;
    const rule = new events.Rule(scope, "OnModelPackage", {
      description: `Starts rollout ${spec.name} when a version of model package group ${group} is approved`,
      eventPattern: {
        source: ["aws.sagemaker"],
        detailType: [MODEL_PACKAGE_DETAIL_TYPE],
        detail: { ModelPackageGroupName: [group], ModelApprovalStatus: ["Approved"] },
      },
    });
    rule.addTarget(
      new eventTargets.LambdaFunction(this.functions.trigger, {
        retryAttempts: 8,
        deadLetterQueue: this.triggerDeadLetters.queue,
      }),
    );
    // An approval is a push like any other: the rollback cooldown holds it back the same way.
    this.#routes.push({
      rollout: spec.name,
      stateMachineArn,
      repository: modelPackageRoute(group),
      ...(spec.rollbackCooldown ? { cooldown: spec.rollbackCooldown } : {}),
    });
  }

  /**
   * Lets a person's role run the `rollouts` CLI: read status (the table, executions and their
   * history), approve and abort (task tokens, the abort flag), retry and undo (start an execution)
   * — and nothing more. Rollouts added later are covered too. Returns the policy attached to the
   * principal (a role, user or group).
   */
  grantOperate(principal: iam.IGrantable): iam.Policy {
    const policy = new iam.Policy(this, `Operate${this.#operators.length}`, {
      statements: [
        new iam.PolicyStatement({
          sid: "RolloutItems",
          // The CLI reads items, lists them through the byKind index, and writes a rollout item with
          // one conditional PutItem (promote, abort, retry, undo), as the handlers do.
          actions: ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem"],
          resources: this.#tableResources(),
        }),
        new iam.PolicyStatement({
          sid: "ApproveAndAbort",
          actions: ["states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"],
          resources: ["*"],
        }),
      ],
    });
    acknowledgeWildcards(
      policy,
      ["*"],
      "states:SendTaskSuccess/SendTaskFailure/SendTaskHeartbeat have no resource-level permissions (a task token names its execution)",
    );
    const target = principal.grantPrincipal as Partial<iam.IRole>;
    if (typeof target.attachInlinePolicy === "function") {
      target.attachInlinePolicy(policy);
    } else {
      throw new PropsError(`RolloutController.grantOperate`, [
        "principal: give a role, user or group (the grant is one policy attached to it)",
      ]);
    }
    const kmsStatement = this.#kmsStatement();
    if (kmsStatement) policy.addStatements(kmsStatement);
    this.#operators.push(policy);
    for (const r of this.#rollouts.values()) {
      this.#operateOn(policy, r.stateMachine, executionsOf(r.stateMachine));
    }
    return policy;
  }

  /** The props as given (for the dashboard and the docs). */
  get props(): RolloutControllerProps {
    return this.#props;
  }

  #operateOn(policy: iam.Policy, stateMachine: sfn.StateMachine, executions: string): void {
    policy.addStatements(
      new iam.PolicyStatement({
        // ListTagsForResource: the table tag, through which `rollouts waves` finds each pass's table.
        actions: ["states:ListExecutions", "states:StartExecution", "states:ListTagsForResource"],
        resources: [stateMachine.stateMachineArn],
      }),
      new iam.PolicyStatement({
        actions: ["states:DescribeExecution", "states:GetExecutionHistory"],
        resources: [executions],
      }),
    );
    acknowledgeWildcards(
      policy,
      [executions],
      "the CLI reads the executions of the rollouts' state machines, whose names derive from each push",
    );
  }

  /**
   * The table's customer key, only through DynamoDB: the exact actions DynamoDB needs on the
   * caller's behalf (no `GenerateDataKey*`/`ReEncrypt*` wildcards).
   */
  #kmsStatement(): iam.PolicyStatement | undefined {
    const key = this.#props.encryptionKey;
    if (!key) return undefined;
    return new iam.PolicyStatement({
      sid: "TableKey",
      actions: ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"],
      resources: [key.keyArn],
      conditions: { StringEquals: { "kms:ViaService": `dynamodb.${Stack.of(this).region}.amazonaws.com` } },
    });
  }

  #tableResources(): string[] {
    return [this.table.tableArn, `${this.table.tableArn}/index/${TABLE.listIndex.name}`];
  }

  #prometheus(): { url: string; region?: string; workspaceArn?: string } | undefined {
    const prom = this.#props.prometheus;
    if (!prom) return undefined;
    if ("url" in prom) return { url: prom.url };
    const stack = Stack.of(this);
    const ws = parseWorkspace(prom.workspace, prom.region);
    const region = ws.region ?? stack.region;
    return {
      url: `https://aps-workspaces.${region}.amazonaws.com/workspaces/${ws.id}`,
      region,
      workspaceArn: stack.formatArn({
        service: "aps",
        region,
        account: ws.account ?? stack.account,
        resource: "workspace",
        resourceName: ws.id,
      }),
    };
  }

  /** The grants one function's needs call for (the target's come with each rollout). */
  #grantShared(
    name: HandlerName,
    role: iam.Role,
    shared: {
      schedules: string;
      tickerArn: string;
      prometheus: { workspaceArn?: string } | undefined;
    },
  ): void {
    const needs = new Set<Need>(FUNCTION_NEEDS[name]);
    const add = (sid: string, actions: string[], resources: string[], conditions?: Record<string, unknown>) =>
      role.addToPrincipalPolicy(new iam.PolicyStatement({ sid, actions, resources, conditions }));
    // Every function reads and writes single items with conditional writes; none lists or
    // queries (only the CLI does, through grantOperate: the byKind index, runs, measurements).
    add(
      "RolloutTable",
      ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"],
      [this.table.tableArn],
    );
    const kmsStatement = this.#kmsStatement();
    if (kmsStatement) role.addToPrincipalPolicy(kmsStatement);
    const unscoped = ["xray:PutTraceSegments", "xray:PutTelemetryRecords (tracing: ACTIVE)"];
    if (needs.has("timer")) {
      add("TimerSchedules", ["scheduler:CreateSchedule", "scheduler:DeleteSchedule"], [shared.schedules]);
      add("TimerSchedulerRole", ["iam:PassRole"], [this.schedulerRole.roleArn], {
        StringEquals: { "iam:PassedToService": "scheduler.amazonaws.com" },
      });
      add("TimerTicker", ["states:StartExecution"], [shared.tickerArn]);
      acknowledgeWildcards(
        role,
        [shared.schedules],
        "one-time schedules are created per timer key at run time; the grant is limited to the controller's schedule group",
      );
    }
    if (needs.has("tokens")) {
      add("TaskTokens", ["states:SendTaskSuccess", "states:SendTaskFailure"], ["*"]);
      unscoped.push("states:SendTaskSuccess/SendTaskFailure (a task token names its execution)");
    }
    if (needs.has("events")) this.eventBus.grantPutEventsTo(role);
    if (needs.has("metrics") && shared.prometheus?.workspaceArn) {
      add("PrometheusQuery", ["aps:QueryMetrics"], [shared.prometheus.workspaceArn]);
    }
    if (needs.has("metrics")) {
      for (const statement of metricSecretsStatements(this, this.#props.metricSecrets)) {
        role.addToPrincipalPolicy(statement);
      }
    }
    acknowledgeWildcards(role, ["*"], `no resource-level permissions: ${unscoped.join(", ")}`);
  }

  /**
   * `sts:AssumeRole` on exactly the roles a rollout's Prometheus metrics name
   * (`authentication.sigv4.roleArn`), for the functions that measure, in the rollout's own policy.
   */
  #grantAssumeRoles(scope: Construct, roleArns: readonly string[]): void {
    if (roleArns.length === 0) return;
    new iam.Policy(scope, "AssumeMetricRoles", {
      statements: [
        new iam.PolicyStatement({
          sid: "AssumeMetricRoles",
          actions: ["sts:AssumeRole"],
          resources: [...roleArns],
        }),
      ],
      roles: (Object.keys(FUNCTION_NEEDS) as HandlerName[])
        .filter((n) => FUNCTION_NEEDS[n].includes("metrics"))
        .map((n) => this.#roles[n]),
    });
  }

  /** `cloudwatch:GetMetricData` for the functions that measure; once, in its own policy. */
  #grantCloudWatch(): void {
    if (this.#cloudWatchPolicy) return;
    this.#cloudWatchPolicy = new iam.Policy(this, "CloudWatchMetrics", {
      statements: [new iam.PolicyStatement({ actions: ["cloudwatch:GetMetricData"], resources: ["*"] })],
      roles: (Object.keys(FUNCTION_NEEDS) as HandlerName[])
        .filter((n) => FUNCTION_NEEDS[n].includes("metrics"))
        .map((n) => this.#roles[n]),
    });
    acknowledgeWildcards(
      this.#cloudWatchPolicy,
      ["*"],
      "cloudwatch:GetMetricData has no resource-level permissions (analysis metrics with the cloudWatch provider)",
    );
  }
}

/** The ARN pattern of a state machine's executions. */
function executionsOf(stateMachine: sfn.StateMachine): string {
  return Stack.of(stateMachine).formatArn({
    service: "states",
    resource: "execution",
    resourceName: `${stateMachine.stateMachineName}:*`,
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  });
}

const pascal = (file: string) =>
  file
    .split("-")
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join("");
