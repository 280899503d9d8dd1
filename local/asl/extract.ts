import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  localFunctionArn,
  physicalName,
  type ResolveContext,
  resolveString,
  resolveValue,
  type TemplateResource,
  UnresolvableError,
} from "./intrinsics.ts";

/** A state machine of the template, with its plain ASL (substitutions applied). */
export interface ExtractedStateMachine {
  logicalId: string;
  name: string;
  arn: string;
  type: "STANDARD" | "EXPRESS";
  definition: Record<string, unknown>;
  /** Its `Tags`, intrinsics resolved. */
  tags?: Record<string, string>;
}

/** A Lambda function of the template: what the runtime needs to run it in-process. */
export interface ExtractedFunction {
  logicalId: string;
  name: string;
  arn: string;
  /** `index.handler` for a NodejsFunction: file stem and export name. */
  handler: string | undefined;
  runtime: string | undefined;
  timeoutSeconds: number | undefined;
  /** `Environment.Variables`, intrinsics resolved to local names and ARNs. */
  env: Record<string, string>;
  /** `aws:asset:path` (e.g. `asset.<hash>`, relative to `cdk.out`) when the code is an asset. */
  assetPath: string | undefined;
  /** `aws:cdk:path`, e.g. `Stack/Controller/BeginFunction/Resource`. */
  cdkPath: string | undefined;
  /** Inline code (`Code.ZipFile`), when the function has no asset. */
  inlineCode: string | undefined;
}

/** One target of an EventBridge rule. */
export interface ExtractedTarget {
  id: string;
  arn: string;
  roleArn?: string;
  input?: string;
  inputPath?: string;
  inputTransformer?: { inputPathsMap: Record<string, string>; inputTemplate: string };
}

/** An EventBridge rule: its pattern and targets, ready for the local bus. */
export interface ExtractedRule {
  logicalId: string;
  name: string;
  eventBusName: string;
  enabled: boolean;
  eventPattern: unknown;
  scheduleExpression: string | undefined;
  targets: ExtractedTarget[];
}

/**
 * An EventBridge API destination with what its connection adds to each call. Header values kept
 * in Secrets Manager (a `{{resolve:secretsmanager:…}}` dynamic reference) cannot be read on this
 * machine: they are left out and named in `secretHeaders`.
 */
export interface ExtractedApiDestination {
  logicalId: string;
  arn: string;
  endpoint: string;
  method: string;
  headers: Record<string, string>;
  secretHeaders: string[];
}

/** A DynamoDB table, with its resolved properties, so a caller can create it on dynalite. */
export interface ExtractedTable {
  logicalId: string;
  name: string;
  properties: Record<string, unknown>;
}

export interface ExtractedStack {
  stateMachines: ExtractedStateMachine[];
  functions: ExtractedFunction[];
  rules: ExtractedRule[];
  tables: ExtractedTable[];
  apiDestinations: ExtractedApiDestination[];
}

/**
 * A Lambda Function URL (`AWS::Lambda::Url`): the function it invokes and how. Only
 * `RESPONSE_STREAM` runs locally (`extractFunctionUrls` refuses `BUFFERED`, the default).
 */
export interface ExtractedFunctionUrl {
  logicalId: string;
  /** The function's ARN (`TargetFunctionArn` resolved; a name becomes its local ARN). */
  functionArn: string;
  authType: "NONE" | "AWS_IAM";
  invokeMode: "RESPONSE_STREAM";
}

export interface ExtractOptions {
  /** Logical id → `Ref` value, `"<LogicalId>.<Attribute>"` → `Fn::GetAtt` value. */
  refs?: Record<string, string>;
  /** Values of the template's parameters. */
  parameters?: Record<string, string>;
  stackName?: string;
  /** Put before the names of resources the template does not name (see `ResolveContext.namePrefix`). */
  namePrefix?: string;
}

/**
 * Pulls what the embedded runtime runs out of a synthesized CloudFormation template: every state
 * machine's plain ASL (the `DefinitionString` joined, its `DefinitionSubstitutions` applied, each
 * function ARN mapped to `arn:aws:lambda:local:000000000000:function:<name>`), every function with
 * its resolved environment and asset, every EventBridge rule and every table. This is what lets
 * the runtime run the synthesized stack unchanged instead of a hand-written copy of it.
 */
export function extractStack(template: unknown, options: ExtractOptions = {}): ExtractedStack {
  const ctx = resolveContextOf(template, options);
  const resources = ctx.resources;
  const stack: ExtractedStack = {
    stateMachines: [],
    functions: [],
    rules: [],
    tables: [],
    apiDestinations: [],
  };
  for (const [logicalId, resource] of Object.entries(resources)) {
    switch (resource.Type) {
      case "AWS::StepFunctions::StateMachine":
        stack.stateMachines.push(extractStateMachine(logicalId, resource, ctx));
        break;
      case "AWS::Lambda::Function":
        stack.functions.push(extractFunction(logicalId, resource, ctx));
        break;
      case "AWS::Events::Rule":
        stack.rules.push(extractRule(logicalId, resource, ctx));
        break;
      case "AWS::Events::ApiDestination":
        stack.apiDestinations.push(extractApiDestination(logicalId, resource, ctx));
        break;
      case "AWS::DynamoDB::Table":
      case "AWS::DynamoDB::GlobalTable":
        stack.tables.push({
          logicalId,
          name: resolveString({ Ref: logicalId }, ctx, `${logicalId} name`),
          properties: (resolveValue(resource.Properties ?? {}, ctx) ?? {}) as Record<string, unknown>,
        });
        break;
      default:
        break;
    }
  }
  return stack;
}

/**
 * The template's Function URLs (`AWS::Lambda::Url`), before the rest is extracted: the runtime
 * starts them first, so that `Fn::GetAtt [<Url>, FunctionUrl]` resolves to their local addresses
 * (`refs`) wherever the template says it. Refuses what the local server does not do, naming the
 * resource: `BUFFERED` invoke mode (CloudFormation's default), an auth type other than `NONE` or
 * `AWS_IAM`, a missing `TargetFunctionArn`.
 */
export function extractFunctionUrls(template: unknown, options: ExtractOptions = {}): ExtractedFunctionUrl[] {
  const ctx = resolveContextOf(template, options);
  const found = Object.entries(ctx.resources).filter(([, r]) => r.Type === "AWS::Lambda::Url");
  return found.map(([logicalId, resource]) => {
    const props = resource.Properties ?? {};
    const mode = props.InvokeMode ?? "BUFFERED";
    if (mode !== "RESPONSE_STREAM") {
      throw new UnresolvableError(
        `${logicalId} (AWS::Lambda::Url): InvokeMode ${String(mode)} is not supported by the embedded runtime, only RESPONSE_STREAM${props.InvokeMode === undefined ? " (BUFFERED is the default when InvokeMode is not set)" : ""}`,
      );
    }
    const authType = props.AuthType;
    if (authType !== "NONE" && authType !== "AWS_IAM") {
      throw new UnresolvableError(
        `${logicalId} (AWS::Lambda::Url): AuthType must be NONE or AWS_IAM, not ${JSON.stringify(authType)}`,
      );
    }
    if (props.TargetFunctionArn === undefined) {
      throw new UnresolvableError(`${logicalId} (AWS::Lambda::Url): TargetFunctionArn is missing`);
    }
    const target = resolveString(props.TargetFunctionArn, ctx, `${logicalId}.TargetFunctionArn`);
    return {
      logicalId,
      functionArn: target.startsWith("arn:") ? target : localFunctionArn(target),
      authType,
      invokeMode: mode,
    };
  });
}

/**
 * What resolving a template's values needs: its resources and conditions, its parameters' defaults
 * overridden by `options.parameters`, and the given refs, stack name and name prefix.
 */
function resolveContextOf(template: unknown, options: ExtractOptions): ResolveContext {
  const root = (template ?? {}) as {
    Resources?: Record<string, TemplateResource>;
    Conditions?: Record<string, unknown>;
    Parameters?: Record<string, { Default?: unknown }>;
  };
  const parameters: Record<string, string> = {};
  for (const [name, parameter] of Object.entries(root.Parameters ?? {})) {
    if (parameter.Default !== undefined) parameters[name] = String(parameter.Default);
  }
  Object.assign(parameters, options.parameters);
  return {
    resources: root.Resources ?? {},
    ...(options.refs === undefined ? {} : { refs: options.refs }),
    parameters,
    ...(root.Conditions === undefined ? {} : { conditions: root.Conditions }),
    ...(options.stackName === undefined ? {} : { stackName: options.stackName }),
    ...(options.namePrefix === undefined ? {} : { namePrefix: options.namePrefix }),
  };
}

/** Several extracted templates as one (their names kept apart by each one's `namePrefix`). */
export function mergeStacks(stacks: readonly ExtractedStack[]): ExtractedStack {
  return {
    stateMachines: stacks.flatMap((s) => s.stateMachines),
    functions: stacks.flatMap((s) => s.functions),
    rules: stacks.flatMap((s) => s.rules),
    tables: stacks.flatMap((s) => s.tables),
    apiDestinations: stacks.flatMap((s) => s.apiDestinations),
  };
}

function extractStateMachine(
  logicalId: string,
  resource: TemplateResource,
  ctx: ResolveContext,
): ExtractedStateMachine {
  const props = resource.Properties ?? {};
  let text: string;
  if (props.DefinitionString !== undefined) {
    text = resolveString(props.DefinitionString, ctx, `${logicalId}.DefinitionString`);
  } else if (props.Definition !== undefined) {
    text = JSON.stringify(resolveValue(props.Definition, ctx));
  } else {
    throw new UnresolvableError(`${logicalId}: only DefinitionString or Definition is supported locally`);
  }
  const substitutions = (resolveValue(props.DefinitionSubstitutions ?? {}, ctx) ?? {}) as Record<
    string,
    unknown
  >;
  text = applySubstitutions(text, substitutions);
  let definition: Record<string, unknown>;
  try {
    definition = JSON.parse(text) as Record<string, unknown>;
  } catch (error) {
    throw new UnresolvableError(
      `${logicalId}: the resolved definition is not JSON: ${(error as Error).message}`,
    );
  }
  const name = physicalName(logicalId, resource, ctx.namePrefix);
  return {
    logicalId,
    name,
    arn: resolveString({ Ref: logicalId }, ctx, `${logicalId} ARN`),
    type: props.StateMachineType === "EXPRESS" ? "EXPRESS" : "STANDARD",
    definition,
    tags: Object.fromEntries(
      ((resolveValue(props.Tags ?? [], ctx) ?? []) as { Key: string; Value: unknown }[]).map((t) => [
        t.Key,
        String(t.Value),
      ]),
    ),
  };
}

/**
 * Applies `DefinitionSubstitutions` as Step Functions does: every `${key}` whose key is listed is
 * replaced by its value; other `${...}` are left alone.
 */
export function applySubstitutions(text: string, substitutions: Readonly<Record<string, unknown>>): string {
  return text.replace(/\$\{([^}]+)\}/g, (whole, key: string) => {
    const value = substitutions[key];
    if (value === undefined) return whole;
    return typeof value === "string" ? value : JSON.stringify(value);
  });
}

function extractFunction(
  logicalId: string,
  resource: TemplateResource,
  ctx: ResolveContext,
): ExtractedFunction {
  const props = resource.Properties ?? {};
  const metadata = resource.Metadata ?? {};
  const environment = (resolveValue(props.Environment ?? {}, ctx) ?? {}) as {
    Variables?: Record<string, unknown>;
  };
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(environment.Variables ?? {})) {
    env[key] = typeof value === "string" ? value : JSON.stringify(value);
  }
  const code = (props.Code ?? {}) as { ZipFile?: unknown };
  const name = physicalName(logicalId, resource, ctx.namePrefix);
  return {
    logicalId,
    name,
    arn: resolveString({ "Fn::GetAtt": [logicalId, "Arn"] }, ctx, `${logicalId} ARN`),
    handler: typeof props.Handler === "string" ? props.Handler : undefined,
    runtime: typeof props.Runtime === "string" ? props.Runtime : undefined,
    timeoutSeconds: typeof props.Timeout === "number" ? props.Timeout : undefined,
    env,
    assetPath: typeof metadata["aws:asset:path"] === "string" ? metadata["aws:asset:path"] : undefined,
    cdkPath: typeof metadata["aws:cdk:path"] === "string" ? metadata["aws:cdk:path"] : undefined,
    inlineCode:
      code.ZipFile === undefined ? undefined : resolveString(code.ZipFile, ctx, `${logicalId}.Code`),
  };
}

function extractRule(logicalId: string, resource: TemplateResource, ctx: ResolveContext): ExtractedRule {
  const props = (resolveValue(resource.Properties ?? {}, ctx) ?? {}) as Record<string, unknown>;
  const busName = typeof props.EventBusName === "string" ? busNameOf(props.EventBusName) : "default";
  const targets = ((props.Targets ?? []) as Array<Record<string, unknown>>).map((target): ExtractedTarget => {
    const transformer = target.InputTransformer as
      | { InputPathsMap?: Record<string, string>; InputTemplate: string }
      | undefined;
    return {
      id: String(target.Id ?? ""),
      arn: String(target.Arn ?? ""),
      ...(typeof target.RoleArn === "string" ? { roleArn: target.RoleArn } : {}),
      ...(typeof target.Input === "string" ? { input: target.Input } : {}),
      ...(typeof target.InputPath === "string" ? { inputPath: target.InputPath } : {}),
      ...(transformer === undefined
        ? {}
        : {
            inputTransformer: {
              inputPathsMap: transformer.InputPathsMap ?? {},
              inputTemplate: transformer.InputTemplate,
            },
          }),
    };
  });
  const pattern = props.EventPattern;
  return {
    logicalId,
    name: typeof props.Name === "string" ? props.Name : `${ctx.namePrefix ?? ""}${logicalId}`,
    eventBusName: busName,
    enabled: props.State !== "DISABLED",
    eventPattern: typeof pattern === "string" ? JSON.parse(pattern) : pattern,
    scheduleExpression: typeof props.ScheduleExpression === "string" ? props.ScheduleExpression : undefined,
    targets,
  };
}

function extractApiDestination(
  logicalId: string,
  resource: TemplateResource,
  ctx: ResolveContext,
): ExtractedApiDestination {
  const raw = (resource.Properties ?? {}) as Record<string, unknown>;
  const connectionRef = raw.ConnectionArn as { "Fn::GetAtt"?: [string, string] } | undefined;
  const connectionId = connectionRef?.["Fn::GetAtt"]?.[0];
  const connection = connectionId === undefined ? undefined : ctx.resources[connectionId];
  const auth = ((connection ? resolveValue(connection.Properties ?? {}, ctx) : {}) ?? {}) as {
    AuthParameters?: {
      ApiKeyAuthParameters?: { ApiKeyName?: string; ApiKeyValue?: string };
      InvocationHttpParameters?: { HeaderParameters?: Array<{ Key?: string; Value?: string }> };
    };
  };
  const pairs: Array<[string | undefined, string | undefined]> = [
    [
      auth.AuthParameters?.ApiKeyAuthParameters?.ApiKeyName,
      auth.AuthParameters?.ApiKeyAuthParameters?.ApiKeyValue,
    ],
    ...(auth.AuthParameters?.InvocationHttpParameters?.HeaderParameters ?? []).map(
      (h): [string | undefined, string | undefined] => [h.Key, h.Value],
    ),
  ];
  const headers: Record<string, string> = {};
  const secretHeaders: string[] = [];
  for (const [key, value] of pairs) {
    if (key === undefined || value === undefined) continue;
    if (value.includes("{{resolve:")) secretHeaders.push(key);
    else headers[key] = value;
  }
  return {
    logicalId,
    arn: resolveString({ "Fn::GetAtt": [logicalId, "Arn"] }, ctx, `${logicalId} ARN`),
    endpoint: resolveString(raw.InvocationEndpoint, ctx, `${logicalId}.InvocationEndpoint`),
    method: typeof raw.HttpMethod === "string" ? raw.HttpMethod : "POST",
    headers,
    secretHeaders,
  };
}

/** A bus given by name or ARN → its name. */
export function busNameOf(nameOrArn: string): string {
  const marker = ":event-bus/";
  const at = nameOrArn.indexOf(marker);
  return at < 0 ? nameOrArn : nameOrArn.slice(at + marker.length);
}

/**
 * Which `functions/handlers/<name>.ts` entry a function runs, for the fast in-process path.
 * Tries, in order: the function's `aws:cdk:path` (a segment such as `SetWeight`, `set-weight` or
 * `SetWeightFunction` naming a handler), its logical id, and the esbuild path comments of the
 * bundled asset in `cdkOut` (`// functions/handlers/set-weight.ts`). Returns the handler name.
 */
export function handlerNameFor(
  fn: ExtractedFunction,
  handlerNames: readonly string[],
  options: { cdkOut?: string } = {},
): string | undefined {
  const flat = (text: string) => text.toLowerCase().replace(/[^a-z0-9]/g, "");
  const byLength = [...handlerNames].sort((a, b) => b.length - a.length);
  const segments = (fn.cdkPath ?? "").split("/").map(flat);
  for (const name of byLength) {
    const key = flat(name);
    if (
      segments.some((segment) => segment === key || segment === `${key}function` || segment === `${key}fn`)
    ) {
      return name;
    }
  }
  const id = flat(fn.logicalId);
  for (const name of byLength) {
    if (id.startsWith(flat(name)) || id.includes(`${flat(name)}function`)) return name;
  }
  if (options.cdkOut !== undefined && fn.assetPath !== undefined) {
    for (const file of ["index.mjs", "index.js"]) {
      const path = join(options.cdkOut, fn.assetPath, file);
      if (!existsSync(path)) continue;
      const text = readFileSync(path, "utf8");
      for (const name of byLength) {
        if (text.includes(`functions/handlers/${name}.ts`)) return name;
      }
    }
  }
  return undefined;
}
