import { Stack, Validations } from "aws-cdk-lib";
import type { IConstruct } from "constructs";

/**
 * Acknowledges cdk-nag's `AwsSolutions-IAM5` findings for exactly these wildcard resources on a
 * construct (a role or a policy), each with why. cdk-nag v3 matches finding IDs exactly
 * (`AwsSolutions-IAM5[Resource::…]`, with CloudFormation references flattened to `<Logical.Attr>`),
 * so the IDs are computed the way cdk-nag computes them, never broadened to the whole rule.
 */
export function acknowledgeWildcards(scope: IConstruct, resources: readonly string[], reason: string): void {
  const stack = Stack.of(scope);
  for (const resource of resources) {
    const finding = flatten(stack.resolve(resource));
    Validations.of(scope).acknowledge({ id: `AwsSolutions-IAM5[Resource::${finding}]`, reason });
  }
}

/** Acknowledges one whole rule on a construct, with why. */
export function acknowledge(scope: IConstruct, id: string, reason: string): void {
  Validations.of(scope).acknowledge({ id, reason });
}

/** cdk-nag's `flattenCfnReference`: `{Ref: X}` → `<X>`, `Fn::GetAtt` → `<X.Attr>`, joins concatenated. */
export function flatten(node: unknown): string {
  if (node === undefined) return "";
  if (typeof node === "string") return node.replace(/\$\{/g, "<").replace(/}/g, ">");
  const o = node as Record<string, unknown>;
  if (o["Fn::Join"]) {
    const [delimiter, items] = o["Fn::Join"] as [string, unknown[]];
    return items.map(flatten).join(delimiter);
  }
  if (o["Fn::Sub"]) return flatten(o["Fn::Sub"]);
  if (o["Fn::GetAtt"]) {
    const [resource, attribute] = o["Fn::GetAtt"] as [unknown, unknown];
    return `<${flatten(resource)}.${flatten(attribute)}>`;
  }
  if (o["Fn::ImportValue"]) return flatten(o["Fn::ImportValue"]);
  if (o.Ref) return `<${flatten(o.Ref)}>`;
  return JSON.stringify(node);
}

/** The `*` statements CDK adds to a state machine's role for logging and tracing. */
export function acknowledgeStateMachineRole(stateMachine: { role: IConstruct }): void {
  acknowledgeWildcards(
    stateMachine.role,
    ["*"],
    "added by CDK for logging level ALL and X-Ray: logs:CreateLogDelivery/GetLogDelivery/UpdateLogDelivery/DeleteLogDelivery/ListLogDeliveries/PutResourcePolicy/DescribeResourcePolicies/DescribeLogGroups and xray:PutTraceSegments/PutTelemetryRecords/GetSamplingRules/GetSamplingTargets have no resource-level permissions",
  );
}
