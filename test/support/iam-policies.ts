import { runSimulation } from "@cloud-copilot/iam-simulate";
import { HANDLERS, ROLLOUT_HANDLERS } from "../../functions/config.ts";
import {
  LOCAL_ACCOUNT,
  type ResolveContext,
  resolveValue,
  type TemplateResource,
} from "../../local/asl/intrinsics.ts";
import type { IamCall } from "./iam-calls.ts";

/** One statement of a role's policies, resolved to the ARNs the embedded runtime uses. */
export interface RoleStatement {
  /** The policy it is in (its logical id, or `<role>/<inline name>`) and its Sid or index. */
  readonly id: string;
  readonly statement: Record<string, unknown>;
}

/** A function of the template and the role it runs as. */
export interface FunctionRole {
  /** The function's name in the embedded runtime (`FunctionName`, else its logical id). */
  readonly name: string;
  /** The handler it runs (`begin`, `router`, …), or its logical id for any other function. */
  readonly label: string;
  readonly roleArn: string;
  readonly statements: readonly RoleStatement[];
}

type Resources = Record<string, TemplateResource>;

const arrayOf = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/** The handler a function runs, from its `aws:cdk:path` (`…/Controller/CheckReady/Resource` → `checkReady`). */
function labelOf(logicalId: string, resource: TemplateResource): string {
  const segments = String(resource.Metadata?.["aws:cdk:path"] ?? "").split("/");
  const own = (segments.at(-1) === "Resource" ? segments.at(-2) : segments.at(-1))?.toLowerCase() ?? "";
  const names = [...Object.keys(HANDLERS), ...Object.keys(ROLLOUT_HANDLERS)];
  return names.find((n) => own === n.toLowerCase() || own.endsWith(n.toLowerCase())) ?? logicalId;
}

/**
 * Every function of a synthesized template with its role's statements: the `AWS::IAM::Policy` and
 * `AWS::IAM::ManagedPolicy` resources attached to the role and its inline `Policies`, with `Ref`,
 * `Fn::GetAtt`, `Fn::Join`, `Fn::Sub` resolved as the embedded runtime resolves them (region
 * `local`, account `000000000000`), so they compare with the ARNs the functions call. AWS managed
 * policies (`ManagedPolicyArns`, e.g. `AWSLambdaBasicExecutionRole`) are not in the template.
 */
export function functionRoles(template: unknown): FunctionRole[] {
  const t = template as { Resources: Resources; Conditions?: Record<string, unknown> };
  const ctx: ResolveContext = {
    resources: t.Resources,
    ...(t.Conditions ? { conditions: t.Conditions } : {}),
  };
  const byRole = new Map<string, RoleStatement[]>();
  const add = (roleId: string, policyId: string, document: unknown) => {
    const resolved = resolveValue(document, ctx) as { Statement?: unknown };
    const list = byRole.get(roleId) ?? [];
    arrayOf(resolved.Statement as Record<string, unknown>[]).forEach((statement, i) => {
      list.push({ id: `${policyId}/${String(statement.Sid ?? i)}`, statement });
    });
    byRole.set(roleId, list);
  };
  for (const [id, resource] of Object.entries(t.Resources)) {
    const props = resource.Properties ?? {};
    if (resource.Type === "AWS::IAM::Policy" || resource.Type === "AWS::IAM::ManagedPolicy") {
      for (const role of arrayOf(props.Roles as Array<{ Ref?: string }>)) {
        if (typeof role?.Ref === "string") add(role.Ref, id, props.PolicyDocument);
      }
    }
    if (resource.Type === "AWS::IAM::Role") {
      for (const inline of arrayOf(
        props.Policies as Array<{ PolicyName: string; PolicyDocument: unknown }>,
      )) {
        add(id, `${id}/${inline.PolicyName}`, inline.PolicyDocument);
      }
    }
  }
  const functions: FunctionRole[] = [];
  for (const [id, resource] of Object.entries(t.Resources)) {
    if (resource.Type !== "AWS::Lambda::Function") continue;
    const role = resource.Properties?.Role as { "Fn::GetAtt"?: [string, string] } | undefined;
    const roleId = role?.["Fn::GetAtt"]?.[0];
    if (!roleId) continue; // a role from outside the template: nothing to read
    const name =
      typeof resource.Properties?.FunctionName === "string" ? resource.Properties.FunctionName : id;
    functions.push({
      name,
      label: labelOf(id, resource),
      roleArn: String(resolveValue({ "Fn::GetAtt": [roleId, "Arn"] }, ctx)),
      statements: byRole.get(roleId) ?? [],
    });
  }
  return functions;
}

const policyOf = (statements: readonly RoleStatement[]) => ({
  Version: "2012-10-17",
  Statement: statements.map((s) => s.statement),
});

/** What IAM decides for one call under the given statements: `Allowed`, `ImplicitlyDenied`, … or the simulator's errors. */
export async function decide(
  call: IamCall,
  roleArn: string,
  statements: readonly RoleStatement[],
): Promise<string> {
  const result = await runSimulation(
    {
      request: {
        principal: roleArn,
        action: call.action,
        resource: { resource: call.resource, accountId: LOCAL_ACCOUNT },
        contextVariables: { ...call.context },
      },
      identityPolicies: [{ name: "role", policy: policyOf(statements) }],
      serviceControlPolicies: [],
      resourceControlPolicies: [],
    },
    {},
  );
  if (result.resultType === "error") return `error: ${JSON.stringify(result.errors)}`;
  return result.overallResult;
}

/** A call the role does not allow, with the statements that name its service (what IAM considered). */
export interface Denial {
  readonly call: IamCall;
  readonly label: string;
  readonly decision: string;
  readonly considered: readonly RoleStatement[];
}

/** The calls each function made that its role does not allow. */
export async function denials(roles: readonly FunctionRole[], calls: readonly IamCall[]): Promise<Denial[]> {
  const byName = new Map(roles.map((r) => [r.name, r]));
  const out: Denial[] = [];
  for (const call of calls) {
    const role = byName.get(call.fn);
    if (!role) continue; // a function the template does not declare (a test's hook or the local proxy)
    const decision = await decide(call, role.roleArn, role.statements);
    if (decision === "Allowed") continue;
    const service = call.action.split(":")[0];
    const considered = role.statements.filter((s) =>
      arrayOf(s.statement.Action as string | string[]).some((a) => a === "*" || a.split(":")[0] === service),
    );
    out.push({ call, label: role.label, decision, considered });
  }
  return out;
}

/** One action of one statement of a role, and whether a recorded call of the function needed it. */
export interface GrantUse {
  /** The function's handler (`begin`, …). */
  readonly label: string;
  readonly action: string;
  readonly statement: string;
  readonly resources: readonly string[];
  readonly used: boolean;
}

/**
 * Every action of every statement of the functions' roles, and whether some recorded call of that
 * function is allowed by it (the statement alone, with that action alone, decides it). Deny
 * statements are left out: they grant nothing.
 */
export async function grantUse(
  roles: readonly FunctionRole[],
  calls: readonly IamCall[],
): Promise<GrantUse[]> {
  const out: GrantUse[] = [];
  for (const role of roles) {
    const own = calls.filter((c) => c.fn === role.name);
    for (const s of role.statements) {
      if (s.statement.Effect !== "Allow") continue;
      for (const action of arrayOf(s.statement.Action as string | string[])) {
        const single = { ...s, statement: { ...s.statement, Action: action } };
        const pattern = new RegExp(
          `^${action.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")}$`,
          "i",
        );
        let used = false;
        for (const call of own.filter((c) => pattern.test(c.action))) {
          if ((await decide(call, role.roleArn, [single])) === "Allowed") {
            used = true;
            break;
          }
        }
        out.push({
          label: role.label,
          action,
          statement: s.id,
          resources: arrayOf(s.statement.Resource as string | string[]),
          used,
        });
      }
    }
  }
  return out;
}
