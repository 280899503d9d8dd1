import { cfnLint, type LintFinding } from "@sfn-rollouts/test-support/cfn-lint";
import { STACKS } from "@sfn-rollouts/test-support/stacks";
import { Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, it } from "vitest";

type Resources = Record<string, { Type: string }>;

/**
 * The only findings allowed, each with why: the one place cfn-lint is told to look away. A
 * suppression matches a rule and a message, and checks the template too, so it cannot hide
 * another finding of the same rule.
 */
const SUPPRESSED: readonly {
  rule: string;
  message: RegExp;
  /** What else must hold in the template (the group's captures of `message`). */
  holds: (resources: Resources, match: RegExpExecArray) => boolean;
  reason: string;
}[] = [
  {
    rule: "W3005",
    message:
      /^'(\w+)' dependency already enforced by a 'GetAtt' at 'Resources\/(\w+)\/Properties\/Role(Arn)?'$/,
    holds: (resources, [, role]) => resources[role as string]?.Type === "AWS::IAM::Role",
    reason:
      "aws-cdk-lib's own pattern: a Lambda function or a state machine depends on its role construct (`resource.node.addDependency(this.role)`), so that the role's default policy exists before the resource is created and first runs; the DependsOn on the role itself is redundant with the GetAtt, the one on its policy is not",
  },
];

/** The templates of every kind of stack the tests synthesize, by `<kind>/<stack>`. */
function synthesizeAll(): { templates: Record<string, unknown>; resources: Record<string, Resources> } {
  const templates: Record<string, unknown> = {};
  const resources: Record<string, Resources> = {};
  for (const [kind, build] of Object.entries(STACKS)) {
    for (const stack of build()) {
      const name = `${kind}/${stack.stackName}`;
      templates[name] = Template.fromStack(stack).toJSON();
      resources[name] = (templates[name] as { Resources: Resources }).Resources;
    }
  }
  return { templates, resources };
}

/** A security group whose description EC2 refuses (an apostrophe): the linter must say so. */
const PLANTED = {
  Resources: {
    Group: {
      Type: "AWS::EC2::SecurityGroup",
      Properties: { GroupDescription: "the cluster's security group", VpcId: "vpc-0a1b2c3d4e5f60718" },
    },
  },
};

describe("cfn-lint on every template the tests synthesize", () => {
  let findings: LintFinding[];
  let resources: Record<string, Resources>;
  const used = new Set<string>();

  beforeAll(() => {
    const all = synthesizeAll();
    resources = all.resources;
    findings = cfnLint({ ...all.templates, planted: PLANTED });
  });

  const isSuppressed = (f: LintFinding): boolean =>
    SUPPRESSED.some((s) => {
      const match = s.rule === f.rule ? s.message.exec(f.message) : null;
      const hit = match !== null && s.holds(resources[f.template] ?? {}, match);
      if (hit) used.add(s.rule);
      return hit;
    });

  it("finds a planted fault, so a clean result means something", () => {
    expect(findings.filter((f) => f.template === "planted")).toEqual([
      expect.objectContaining({
        rule: "E3031",
        level: "Error",
        path: "Resources/Group/Properties/GroupDescription",
      }),
    ]);
  });

  it("reports no error and no warning but the suppressed ones, each suppression still needed", () => {
    const templates = Object.keys(resources);
    expect(templates.length).toBeGreaterThanOrEqual(14);
    const left = findings
      .filter((f) => f.template !== "planted" && !isSuppressed(f))
      .map((f) => `${f.template} ${f.rule} ${f.path}: ${f.message}`);
    expect(left).toEqual([]);
    expect([...used].sort()).toEqual(SUPPRESSED.map((s) => s.rule).sort());
  });
});
