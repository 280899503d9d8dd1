import { CfnOutput, Duration, Fn, type RemovalPolicy, Stack } from "aws-cdk-lib";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as nodejs from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { ENV } from "../functions/config.ts";
import { modelPk } from "../functions/store/keys.ts";
import { MODEL_ROUTER_URL } from "../statemachine/providers.ts";
import { BUNDLING, FUNCTION_DEFAULTS, handlerEntry, PROJECT_ROOT, prebuiltBundle } from "./functions.ts";
import { acknowledge, acknowledgeWildcards } from "./nag.ts";

/** How callers reach the router's Function URL. */
export interface ModelRouterOptions {
  /**
   * `AWS_IAM` (callers sign with SigV4 and need `lambda:InvokeFunctionUrl`) unless the app says
   * `NONE` explicitly: a public URL that anyone can call, and so run the models.
   * @default lambda.FunctionUrlAuthType.AWS_IAM
   */
  readonly authType?: lambda.FunctionUrlAuthType;
}

/** What the construct made for a rollout's model router. */
export interface ModelRouterResources {
  readonly function: lambda.Function;
  readonly url: lambda.FunctionUrl;
  readonly output: CfnOutput;
}

interface ModelRouterProps extends ModelRouterOptions {
  readonly rollout: string;
  /** The router's name: its items in the table are `MODEL#<routerName>` (the target's endpoint). */
  readonly routerName: string;
  readonly endpointName: string;
  readonly table: dynamodb.ITable;
  /** The table key's statement, when the table is encrypted with a customer key. */
  readonly tableKey?: iam.PolicyStatement;
  readonly logRetention: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

/**
 * The router function of one rollout (`functions/handlers/router.ts`) behind a Function URL in
 * `RESPONSE_STREAM` mode, so the answer is sent before the mirror copies: its role reads and writes
 * only the router's `MODEL#` items of the table and invokes only the target's endpoint.
 */
export function modelRouter(scope: Construct, props: ModelRouterProps): ModelRouterResources {
  const construct = new Construct(scope, "ModelRouter");
  const stack = Stack.of(scope);
  const role = new iam.Role(construct, "Role", {
    description: `sfn-rollouts model router of ${props.rollout}`,
    assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
  });
  const logGroup = new logs.LogGroup(construct, "Logs", {
    retention: props.logRetention,
    removalPolicy: props.removalPolicy,
  });
  logGroup.grantWrite(role);
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: "RouterItems",
      actions: ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"],
      resources: [props.table.tableArn],
      conditions: { "ForAllValues:StringEquals": { "dynamodb:LeadingKeys": [modelPk(props.routerName)] } },
    }),
  );
  if (props.tableKey) role.addToPrincipalPolicy(props.tableKey);
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: "InvokeEndpoint",
      actions: ["sagemaker:InvokeEndpoint"],
      // SageMaker ARNs name resources in lower case.
      resources: [
        stack.formatArn({
          service: "sagemaker",
          resource: "endpoint",
          resourceName: props.endpointName.toLowerCase(),
        }),
      ],
    }),
  );
  acknowledgeWildcards(
    role,
    ["*"],
    "no resource-level permissions: xray:PutTraceSegments, xray:PutTelemetryRecords (tracing: ACTIVE)",
  );
  const settings: lambda.FunctionOptions = {
    ...FUNCTION_DEFAULTS,
    description: `sfn-rollouts: model router of ${props.rollout}`,
    role,
    logGroup,
    // A served call and its shadow copies (30 s each at most) within one invocation.
    timeout: Duration.seconds(90),
    environment: {
      [ENV.tableName]: props.table.tableName,
      [ENV.routerName]: props.routerName,
      NODE_OPTIONS: "--enable-source-maps",
      POWERTOOLS_SERVICE_NAME: "sfn-rollouts",
    },
  };
  const prebuilt = prebuiltBundle("router");
  const fn = prebuilt
    ? new lambda.Function(construct, "Function", {
        ...settings,
        runtime: FUNCTION_DEFAULTS.runtime,
        code: lambda.Code.fromAsset(prebuilt),
        handler: "index.handler",
      })
    : new nodejs.NodejsFunction(construct, "Function", {
        ...settings,
        entry: handlerEntry("router"),
        handler: "handler",
        projectRoot: PROJECT_ROOT,
        depsLockFilePath: `${PROJECT_ROOT.replace(/\/$/, "")}/package-lock.json`,
        bundling: BUNDLING,
      });
  acknowledge(
    fn,
    "AwsSolutions-L1",
    "Node.js 22 is the Lambda runtime the project deploys on; the bundle targets node20 so that the same code also runs in the embedded runtime on Node 20",
  );
  const url = fn.addFunctionUrl({
    authType: props.authType ?? lambda.FunctionUrlAuthType.AWS_IAM,
    invokeMode: lambda.InvokeMode.RESPONSE_STREAM,
  });
  const output = new CfnOutput(construct, "Url", {
    description: `The model router of rollout ${props.rollout} (Function URL)`,
    value: url.url,
  });
  return { function: fn, url, output };
}

/** True when a compiled definition reads the rollout's model router (`{{rollout.modelRouter}}`). */
export function readsModelRouter<T>(definition: T): boolean {
  return JSON.stringify(definition).includes(MODEL_ROUTER_URL);
}

/**
 * The definition with `{{rollout.modelRouter}}` replaced by the router's Function URL (a token that
 * CloudFormation resolves), without the trailing slash so `{{rollout.modelRouter}}/path` stays one:
 * the URL's own scheme and host (`https:` on AWS, `http:` in the embedded runtime).
 */
export function withModelRouterUrl<T>(definition: T, url: lambda.FunctionUrl): T {
  // "https://<id>.lambda-url.<region>.on.aws/" split on "/" is the scheme, "", the host, "".
  const parts = Fn.split("/", url.url);
  const address = `${Fn.select(0, parts)}//${Fn.select(2, parts)}`;
  return JSON.parse(JSON.stringify(definition).split(MODEL_ROUTER_URL).join(address)) as T;
}

/**
 * `lambda:InvokeFunctionUrl` on exactly the router function, and only through its IAM-authenticated
 * URL, for the roles that measure (the samples provider signs its reads of `/compare`).
 */
export function grantRouterReads(router: ModelRouterResources, roles: readonly iam.IRole[]): void {
  for (const role of roles) {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["lambda:InvokeFunctionUrl"],
        resources: [router.function.functionArn],
        conditions: { StringEquals: { "lambda:FunctionUrlAuthType": "AWS_IAM" } },
      }),
    );
  }
}
