import { RolloutsError } from "../../statemachine/errors.ts";
/**
 * CloudFormation intrinsic functions, resolved the way the embedded runtime needs them: every
 * resource gets a deterministic local name and ARN (region `local`, account `000000000000`), so
 * the definitions, environments and rule targets pulled out of a synthesized template point at
 * the runtime's own functions, state machines and tables.
 */

/** Region written into every local ARN. */
export const LOCAL_REGION = "local";
/** Account written into every local ARN. */
export const LOCAL_ACCOUNT = "000000000000";

/** The ARN a local Lambda function answers to. */
export function localFunctionArn(name: string): string {
  return `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT}:function:${name}`;
}

/** The ARN a local state machine answers to. */
export function localStateMachineArn(name: string): string {
  return `arn:aws:states:${LOCAL_REGION}:${LOCAL_ACCOUNT}:stateMachine:${name}`;
}

/** One resource of a template, as far as resolution needs it. */
export interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
  Metadata?: Record<string, unknown>;
}

export interface ResolveContext {
  resources: Readonly<Record<string, TemplateResource>>;
  /**
   * Caller overrides: a logical id maps to what `Ref` gives (e.g. the real table name of a
   * dynalite table), and `"<LogicalId>.<Attribute>"` to what `Fn::GetAtt` gives.
   */
  refs?: Readonly<Record<string, string>>;
  /** Template parameters' values (`Ref` to a parameter). */
  parameters?: Readonly<Record<string, string>>;
  /** The template's `Conditions`, evaluated on demand for `Fn::If`. */
  conditions?: Readonly<Record<string, unknown>>;
  stackName?: string;
  /**
   * Put before the logical id of a resource with no explicit name, as CloudFormation names such a
   * resource after its stack: several templates' resources then do not collide on one runtime.
   */
  namePrefix?: string;
}

/** Marks `AWS::NoValue`: the property is removed from its parent. */
const NO_VALUE = Symbol("AWS::NoValue");

/** An intrinsic the runtime cannot resolve (an import, an unknown function). */
export class UnresolvableError extends RolloutsError {
  override readonly name = "UnresolvableError";
}

/**
 * The physical name a resource gets locally: its explicit name property, else its logical id
 * (after `prefix`, the stack's `namePrefix`).
 */
export function physicalName(logicalId: string, resource: TemplateResource | undefined, prefix = ""): string {
  const props = resource?.Properties ?? {};
  const named: Record<string, string> = {
    "AWS::Lambda::Function": "FunctionName",
    "AWS::StepFunctions::StateMachine": "StateMachineName",
    "AWS::DynamoDB::Table": "TableName",
    "AWS::Events::EventBus": "Name",
    "AWS::Events::Rule": "Name",
    "AWS::Scheduler::ScheduleGroup": "Name",
    "AWS::IAM::Role": "RoleName",
    "AWS::SQS::Queue": "QueueName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::Events::ApiDestination": "Name",
    "AWS::Events::Connection": "Name",
  };
  const key = resource === undefined ? undefined : named[resource.Type];
  const value = key === undefined ? undefined : props[key];
  return typeof value === "string" ? value : `${prefix}${logicalId}`;
}

/** What `Ref` gives for a resource, a parameter or a pseudo parameter. */
export function refOf(id: string, ctx: ResolveContext): string {
  const override = ctx.refs?.[id];
  if (override !== undefined) return override;
  const pseudo = pseudoParameter(id, ctx);
  if (pseudo !== undefined) return pseudo;
  const parameter = ctx.parameters?.[id];
  if (parameter !== undefined) return parameter;
  const resource = ctx.resources[id];
  if (resource === undefined) throw new UnresolvableError(`Ref to unknown logical id "${id}"`);
  const name = physicalName(id, resource, ctx.namePrefix);
  switch (resource.Type) {
    case "AWS::StepFunctions::StateMachine":
      return localStateMachineArn(name);
    case "AWS::SNS::Topic":
      return `arn:aws:sns:${LOCAL_REGION}:${LOCAL_ACCOUNT}:${name}`;
    default:
      return name;
  }
}

/** What `Fn::GetAtt` gives. */
export function attributeOf(id: string, attribute: string, ctx: ResolveContext): string {
  const override = ctx.refs?.[`${id}.${attribute}`];
  if (override !== undefined) return override;
  const resource = ctx.resources[id];
  if (resource === undefined) throw new UnresolvableError(`Fn::GetAtt of unknown logical id "${id}"`);
  // A `Ref` override names the resource (a table's real name) unless `Ref` gives an ARN.
  const refIsArn =
    resource.Type === "AWS::StepFunctions::StateMachine" || resource.Type === "AWS::SNS::Topic";
  const name = (refIsArn ? undefined : ctx.refs?.[id]) ?? physicalName(id, resource, ctx.namePrefix);
  const arn = resourceArn(resource.Type, name);
  if (attribute === "Arn") return arn;
  if (attribute === "Name" || attribute === "TableName" || attribute === "RoleId") return name;
  if (attribute === "StreamArn") return `${arn}/stream/local`;
  if (resource.Type === "AWS::Lambda::Url") {
    // The runtime passes the address it serves the URL on (`refs`); without one, the shape AWS gives.
    const urlId = id.toLowerCase();
    if (attribute === "UrlId") return urlId;
    if (attribute === "FunctionUrl") return `https://${urlId}.lambda-url.${LOCAL_REGION}.on.aws/`;
  }
  return `${arn}#${attribute}`;
}

function resourceArn(type: string, name: string): string {
  switch (type) {
    case "AWS::Lambda::Function":
      return localFunctionArn(name);
    case "AWS::StepFunctions::StateMachine":
      return localStateMachineArn(name);
    case "AWS::DynamoDB::Table":
      return `arn:aws:dynamodb:${LOCAL_REGION}:${LOCAL_ACCOUNT}:table/${name}`;
    case "AWS::Events::EventBus":
      return `arn:aws:events:${LOCAL_REGION}:${LOCAL_ACCOUNT}:event-bus/${name}`;
    case "AWS::Events::Rule":
      return `arn:aws:events:${LOCAL_REGION}:${LOCAL_ACCOUNT}:rule/${name}`;
    case "AWS::Events::ApiDestination":
      return `arn:aws:events:${LOCAL_REGION}:${LOCAL_ACCOUNT}:api-destination/${name}`;
    case "AWS::Events::Connection":
      return `arn:aws:events:${LOCAL_REGION}:${LOCAL_ACCOUNT}:connection/${name}`;
    case "AWS::Scheduler::ScheduleGroup":
      return `arn:aws:scheduler:${LOCAL_REGION}:${LOCAL_ACCOUNT}:schedule-group/${name}`;
    case "AWS::IAM::Role":
      return `arn:aws:iam::${LOCAL_ACCOUNT}:role/${name}`;
    case "AWS::SQS::Queue":
      return `arn:aws:sqs:${LOCAL_REGION}:${LOCAL_ACCOUNT}:${name}`;
    case "AWS::Logs::LogGroup":
      return `arn:aws:logs:${LOCAL_REGION}:${LOCAL_ACCOUNT}:log-group:${name}:*`;
    default: {
      const service = type.split("::")[1]?.toLowerCase() ?? "local";
      return `arn:aws:${service}:${LOCAL_REGION}:${LOCAL_ACCOUNT}:${name}`;
    }
  }
}

function pseudoParameter(id: string, ctx: ResolveContext): string | undefined {
  switch (id) {
    case "AWS::Region":
      return LOCAL_REGION;
    case "AWS::AccountId":
      return LOCAL_ACCOUNT;
    case "AWS::Partition":
      return "aws";
    case "AWS::URLSuffix":
      return "amazonaws.com";
    case "AWS::StackName":
      return ctx.stackName ?? "LocalStack";
    case "AWS::StackId":
      return `arn:aws:cloudformation:${LOCAL_REGION}:${LOCAL_ACCOUNT}:stack/${ctx.stackName ?? "LocalStack"}/local`;
    default:
      return undefined;
  }
}

/**
 * Deeply resolves `Ref`, `Fn::GetAtt`, `Fn::Join`, `Fn::Sub`, `Fn::Select`, `Fn::Split`,
 * `Fn::If` (with `Fn::Equals`/`Not`/`And`/`Or` conditions) and `AWS::NoValue` in a value.
 */
export function resolveValue(value: unknown, ctx: ResolveContext): unknown {
  const resolved = resolveInner(value, ctx);
  return resolved === NO_VALUE ? undefined : resolved;
}

/** `resolveValue` for a value that must end up a string (ARNs, names, definition strings). */
export function resolveString(value: unknown, ctx: ResolveContext, what: string): string {
  const resolved = resolveValue(value, ctx);
  if (typeof resolved === "string") return resolved;
  if (typeof resolved === "number" || typeof resolved === "boolean") return String(resolved);
  throw new UnresolvableError(`${what} did not resolve to a string: ${JSON.stringify(resolved)}`);
}

function resolveInner(value: unknown, ctx: ResolveContext): unknown {
  if (Array.isArray(value)) {
    return value.map((item) => resolveInner(item, ctx)).filter((item) => item !== NO_VALUE);
  }
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value as Record<string, unknown>);
  const [only] = entries;
  if (entries.length === 1 && only !== undefined) {
    const [key, arg] = only;
    if (key === "Ref") {
      if (arg === "AWS::NoValue") return NO_VALUE;
      return refOf(String(arg), ctx);
    }
    if (key === "Fn::GetAtt") {
      const [id, ...rest] = Array.isArray(arg) ? arg.map(String) : String(arg).split(".");
      return attributeOf(id ?? "", rest.join("."), ctx);
    }
    if (key === "Fn::Join") {
      const [delimiter, list] = arg as [string, unknown[]];
      const parts = resolveInner(list, ctx);
      if (!Array.isArray(parts)) throw new UnresolvableError("Fn::Join needs a list");
      return parts.map((part) => stringPart(part, "Fn::Join")).join(delimiter);
    }
    if (key === "Fn::Sub") return substitute(arg, ctx);
    if (key === "Fn::Select") {
      const [index, list] = arg as [unknown, unknown];
      const items = resolveInner(list, ctx);
      const at = Number(resolveInner(index, ctx));
      if (!Array.isArray(items) || items[at] === undefined)
        throw new UnresolvableError("Fn::Select out of range");
      return items[at];
    }
    if (key === "Fn::Split") {
      const [delimiter, source] = arg as [string, unknown];
      return stringPart(resolveInner(source, ctx), "Fn::Split").split(delimiter);
    }
    if (key === "Fn::If") {
      const [condition, whenTrue, whenFalse] = arg as [string, unknown, unknown];
      return resolveInner(evaluateCondition(condition, ctx) ? whenTrue : whenFalse, ctx);
    }
    if (key === "Fn::ImportValue" || key === "Fn::FindInMap" || key === "Fn::GetAZs") {
      throw new UnresolvableError(`${key} is not supported by the embedded runtime`);
    }
  }
  const out: Record<string, unknown> = {};
  for (const [key, item] of entries) {
    const resolved = resolveInner(item, ctx);
    if (resolved !== NO_VALUE) out[key] = resolved;
  }
  return out;
}

function stringPart(part: unknown, where: string): string {
  if (typeof part === "string") return part;
  if (typeof part === "number" || typeof part === "boolean") return String(part);
  throw new UnresolvableError(`${where}: a part did not resolve to a string: ${JSON.stringify(part)}`);
}

function substitute(arg: unknown, ctx: ResolveContext): string {
  const [template, rawVars] = Array.isArray(arg)
    ? (arg as [string, Record<string, unknown>?])
    : [String(arg)];
  const vars: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(rawVars ?? {})) vars[name] = resolveInner(value, ctx);
  return template.replace(/\$\{(!?)([^}]+)\}/g, (whole, bang: string, name: string) => {
    if (bang === "!") return `\${${name}}`;
    if (Object.hasOwn(vars, name)) return stringPart(vars[name], "Fn::Sub");
    if (name.includes(".") && !name.startsWith("AWS::")) {
      const dot = name.indexOf(".");
      return attributeOf(name.slice(0, dot), name.slice(dot + 1), ctx);
    }
    if (ctx.resources[name] !== undefined || ctx.refs?.[name] !== undefined || name.startsWith("AWS::")) {
      return refOf(name, ctx);
    }
    if (ctx.parameters?.[name] !== undefined) return ctx.parameters[name];
    // Not a resource: left for DefinitionSubstitutions (CloudFormation would refuse it).
    return whole;
  });
}

function evaluateCondition(condition: unknown, ctx: ResolveContext): boolean {
  if (typeof condition === "string") {
    const body = ctx.conditions?.[condition];
    if (body === undefined) throw new UnresolvableError(`unknown condition "${condition}"`);
    return evaluateCondition(body, ctx);
  }
  if (condition === null || typeof condition !== "object") return Boolean(condition);
  const [entry] = Object.entries(condition as Record<string, unknown>);
  if (entry === undefined) return false;
  const [fn, arg] = entry;
  const args = Array.isArray(arg) ? arg : [arg];
  switch (fn) {
    case "Fn::Equals":
      return JSON.stringify(resolveValue(args[0], ctx)) === JSON.stringify(resolveValue(args[1], ctx));
    case "Fn::Not":
      return !evaluateCondition(args[0], ctx);
    case "Fn::And":
      return args.every((item) => evaluateCondition(item, ctx));
    case "Fn::Or":
      return args.some((item) => evaluateCondition(item, ctx));
    case "Condition":
      return evaluateCondition(String(arg), ctx);
    default:
      throw new UnresolvableError(`condition function ${fn} is not supported`);
  }
}
