import { Client } from "@smithy/core/client";
import { LOCAL_ACCOUNT, LOCAL_REGION } from "../../local/asl/intrinsics.ts";

/**
 * One AWS request a function made, as IAM authorizes it: the action (`dynamodb:PutItem`), the
 * resource ARNs AWS checks it against (`*` for an action without resource-level permissions), and
 * the request's context keys (`iam:PassedToService` for a role passed on).
 */
export interface IamCall {
  /** The function's name (`AWS_LAMBDA_FUNCTION_NAME` of the invocation that sent it). */
  readonly fn: string;
  readonly action: string;
  readonly resource: string;
  readonly context: Readonly<Record<string, string>>;
}

/** One SDK command as the client's middleware saw it. */
interface SentCommand {
  readonly clientName: string;
  readonly commandName: string;
  readonly input: Record<string, unknown>;
}

/** The ARNs of the embedded runtime: region `local`, account `000000000000`. */
const arn = (service: string, resource: string, region = LOCAL_REGION) =>
  `arn:aws:${service}:${region}:${LOCAL_ACCOUNT}:${resource}`;

/** The IAM service prefix of an SDK client, by its class name. */
const SERVICE_PREFIX: Readonly<Record<string, string>> = {
  DynamoDBClient: "dynamodb",
  DynamoDBDocumentClient: "dynamodb",
  SFNClient: "states",
  EventBridgeClient: "events",
  SchedulerClient: "scheduler",
  LambdaClient: "lambda",
  SageMakerClient: "sagemaker",
  SageMakerRuntimeClient: "sagemaker",
  CloudWatchClient: "cloudwatch",
  ElasticLoadBalancingV2Client: "elasticloadbalancing",
  ECSClient: "ecs",
  SecretsManagerClient: "secretsmanager",
};

/** Where an SDK operation's IAM action is not its own name (the Service Authorization Reference). */
const ACTION_NAME: Readonly<Record<string, string>> = { "lambda:Invoke": "lambda:InvokeFunction" };

const str = (value: unknown, what: string): string => {
  if (typeof value !== "string" || value === "") throw new Error(`the request has no ${what}`);
  return value;
};

/** A Lambda function's ARN as IAM sees it: a name or ARN, qualified by `Qualifier` or `NAME:QUAL`. */
function lambdaArn(nameOrArn: string, qualifier: unknown): string {
  const base = nameOrArn.startsWith("arn:") ? nameOrArn : arn("lambda", `function:${nameOrArn}`);
  return typeof qualifier === "string" && qualifier !== "" ? `${base}:${qualifier}` : base;
}

/** SageMaker names its resources in lower case in ARNs. */
const sagemaker = (type: string, name: unknown) =>
  arn("sagemaker", `${type}/${str(name, type).toLowerCase()}`);

/**
 * The requests IAM authorizes for one SDK command: the resources by the Service Authorization
 * Reference, plus what AWS checks on the side (`iam:PassRole` of the role a schedule or a model
 * names). An operation with no entry here throws, so a new call cannot slip through unchecked.
 */
export function iamRequests(command: SentCommand): Array<Omit<IamCall, "fn">> {
  const prefix = SERVICE_PREFIX[command.clientName];
  if (!prefix) throw new Error(`no IAM service prefix for the SDK client ${command.clientName}`);
  const operation = command.commandName.replace(/Command$/, "");
  const action = ACTION_NAME[`${prefix}:${operation}`] ?? `${prefix}:${operation}`;
  const input = command.input;
  const one = (resource: string, context: Record<string, string> = {}) => ({ action, resource, context });
  const passRole = (role: unknown, service: string) => ({
    action: "iam:PassRole",
    resource: str(role, "role to pass"),
    context: { "iam:PassedToService": service },
  });
  switch (action) {
    case "dynamodb:GetItem":
    case "dynamodb:PutItem":
    case "dynamodb:UpdateItem":
    case "dynamodb:DeleteItem":
    case "dynamodb:Query": {
      const table = arn("dynamodb", `table/${str(input.TableName, "TableName")}`);
      return [one(typeof input.IndexName === "string" ? `${table}/index/${input.IndexName}` : table)];
    }
    case "dynamodb:TransactWriteItems": {
      const items = (input.TransactItems ?? []) as Array<Record<string, { TableName?: string }>>;
      // A transaction is authorized as the item actions it holds, each on its table.
      const kinds: Record<string, string> = {
        Put: "dynamodb:PutItem",
        Update: "dynamodb:UpdateItem",
        Delete: "dynamodb:DeleteItem",
        ConditionCheck: "dynamodb:ConditionCheckItem",
      };
      return items.flatMap((item) =>
        Object.entries(item).map(([kind, body]) => ({
          action: kinds[kind] ?? `dynamodb:${kind}`,
          resource: arn("dynamodb", `table/${str(body.TableName, "TableName")}`),
          context: {},
        })),
      );
    }
    case "states:SendTaskSuccess":
    case "states:SendTaskFailure":
    case "states:SendTaskHeartbeat":
      return [one("*")];
    case "states:StartExecution":
      return [one(str(input.stateMachineArn, "stateMachineArn"))];
    case "states:DescribeExecution":
    case "states:StopExecution":
      return [one(str(input.executionArn, "executionArn"))];
    case "events:PutEvents": {
      const buses = new Set(
        ((input.Entries ?? []) as Array<{ EventBusName?: string }>).map((e) => e.EventBusName ?? "default"),
      );
      return [...buses].map((bus) => one(bus.startsWith("arn:") ? bus : arn("events", `event-bus/${bus}`)));
    }
    case "scheduler:CreateSchedule":
    case "scheduler:DeleteSchedule":
    case "scheduler:GetSchedule": {
      const group = typeof input.GroupName === "string" ? input.GroupName : "default";
      const schedule = one(arn("scheduler", `schedule/${group}/${str(input.Name, "Name")}`));
      const target = input.Target as { RoleArn?: string } | undefined;
      return action === "scheduler:CreateSchedule"
        ? [schedule, passRole(target?.RoleArn, "scheduler.amazonaws.com")]
        : [schedule];
    }
    case "lambda:InvokeFunction":
      return [one(lambdaArn(str(input.FunctionName, "FunctionName"), input.Qualifier))];
    case "sagemaker:DescribeEndpoint":
    case "sagemaker:UpdateEndpointWeightsAndCapacities":
    case "sagemaker:InvokeEndpoint":
      return [one(sagemaker("endpoint", input.EndpointName))];
    case "sagemaker:UpdateEndpoint":
      // Authorized on the endpoint and on the config it moves to.
      return [
        one(sagemaker("endpoint", input.EndpointName)),
        one(sagemaker("endpoint-config", input.EndpointConfigName)),
      ];
    case "sagemaker:DescribeEndpointConfig":
    case "sagemaker:CreateEndpointConfig":
    case "sagemaker:DeleteEndpointConfig":
      return [one(sagemaker("endpoint-config", input.EndpointConfigName))];
    case "sagemaker:CreateModel":
      return [
        one(sagemaker("model", input.ModelName)),
        passRole(input.ExecutionRoleArn, "sagemaker.amazonaws.com"),
      ];
    case "sagemaker:DescribeModel":
    case "sagemaker:DeleteModel":
      return [one(sagemaker("model", input.ModelName))];
    case "cloudwatch:GetMetricData":
      return [one("*")];
    case "cloudwatch:DescribeAlarms":
      return ((input.AlarmNames ?? []) as string[]).map((name) => one(arn("cloudwatch", `alarm:${name}`)));
    default:
      throw new Error(`no resource mapping for ${action}: say which ARNs AWS authorizes it against`);
  }
}

/**
 * Records every AWS SDK call the functions of the embedded runtime make while it is installed:
 * each client gets a middleware at its first `send` (the functions build their own clients, the
 * product is not changed), which reads the invocation's `AWS_LAMBDA_FUNCTION_NAME` from the
 * per-invocation environment the runtime gives. Calls from outside any invocation (the test, the
 * CLI) are not a function's and are left out.
 */
export class IamCallRecorder {
  readonly calls = new Map<string, IamCall>();
  /** Calls whose mapping failed, kept to be reported rather than thrown inside a handler. */
  readonly unmapped: string[] = [];
  readonly #send = Client.prototype.send;
  readonly #clients = new WeakSet<object>();

  install(): this {
    const recorder = this;
    const original = this.#send;
    Client.prototype.send = function (this: Client<never, never, never, never>, ...args: never[]) {
      recorder.#watch(this);
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof original;
    return this;
  }

  uninstall(): void {
    Client.prototype.send = this.#send;
  }

  /** The distinct calls, by function, action and resource. */
  list(): IamCall[] {
    return [...this.calls.values()];
  }

  /** The distinct calls recorded since the last `take` (one stack's, when stacks run one after another). */
  take(): IamCall[] {
    const calls = this.list();
    this.calls.clear();
    return calls;
  }

  #watch(client: Client<never, never, never, never>): void {
    if (this.#clients.has(client)) return;
    this.#clients.add(client);
    const clientName = client.constructor.name;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const fn = process.env.AWS_LAMBDA_FUNCTION_NAME;
        if (fn)
          this.#record(fn, {
            clientName,
            commandName: String(context.commandName),
            input: args.input as never,
          });
        return next(args);
      },
      { step: "initialize", name: "iamCallRecorder", priority: "high" },
    );
  }

  #record(fn: string, command: SentCommand): void {
    let requests: Array<Omit<IamCall, "fn">>;
    try {
      requests = iamRequests(command);
    } catch (error) {
      this.unmapped.push(`${fn}: ${command.clientName}.${command.commandName}: ${(error as Error).message}`);
      return;
    }
    for (const r of requests) {
      const call = { fn, ...r };
      this.calls.set(`${fn} ${r.action} ${r.resource} ${JSON.stringify(r.context)}`, call);
    }
  }
}
