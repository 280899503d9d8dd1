import { describe, expect, it } from "vitest";
import { readinessChecksFor } from "../../functions/traffic/settings.ts";
import { notificationsProblems, subscriptionProblems } from "../../infra/notifications.ts";
import { targetInput } from "../../local/events/bus.ts";
import { matchesPattern } from "../../local/events/pattern.ts";
import { parseGoDuration } from "../../statemachine/duration.ts";
import { ExprError } from "../../statemachine/expr/errors.ts";
import { compile, envOf } from "../../statemachine/expr/index.ts";
import { parseSources, SpecError } from "../../statemachine/index.ts";
import { parseTemplate } from "../../statemachine/notifications.ts";

/**
 * Names every object inherits. A table of allowed names read with `in` (or `table[name]`) finds
 * them; each table below must refuse them as it refuses any unknown name. The dashboard's
 * operations are walked in test/cli/dashboard-server.test.ts; biome's `lint/no-in-lookup.grit`
 * refuses a new `in` lookup.
 */
const INHERITED = ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf"];

/** An object with `name` as its own key, `__proto__` included (a literal would set the prototype). */
const ownKey = <T>(name: string, value: T): Record<string, T> =>
  JSON.parse(JSON.stringify({ [name]: value }));

const argoSteps = (step: string) => `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: demo}
spec:
  replicas: 2
  selector: {matchLabels: {app: demo}}
  template: {spec: {containers: [{name: app, image: demo:1}]}}
  strategy: {canary: {steps: [{"${step}": {}}, {setWeight: 50}]}}
`;

function specProblems(text: string): string[] {
  try {
    parseSources([{ file: "r.yaml", text }]);
  } catch (error) {
    if (error instanceof SpecError) return error.problems.map((p) => `${p.path}: ${p.message}`);
    throw error;
  }
  return [];
}

describe.each(INHERITED)("the inherited name %s", (name) => {
  it("is no template field: {{name}} is refused, named", () => {
    expect(parseTemplate(`Rollout {{${name}}} aborted`)).toEqual({
      problems: [`{{${name}}} is not a field: a template names fields only, like {{.rollout.name}}`],
    });
  });

  it("is no trigger of a template, and no service of a subscription", () => {
    const slack = { type: "slack" as const, webhookUrl: "https://hooks.slack.com/services/x" };
    expect(
      notificationsProblems({ services: { slack }, templates: ownKey(name, "{{.message}}") }, false),
    ).toEqual([expect.stringMatching(new RegExp(`^notifications.templates: unknown trigger "${name}"`))]);
    const problems = subscriptionProblems(
      { trigger: "on-rollout-aborted", service: name },
      { services: { slack } },
      "s",
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^s\.service: /);
  });

  it("is no Argo step, and no step Argo has that is refused with its reason", () => {
    const problems = specProblems(argoSteps(name));
    expect(problems).toEqual([expect.stringMatching(/^spec\.strategy\.canary\.steps\[0\]/)]);
    expect(problems[0]).not.toMatch(/function|native code/);
  });

  it("is no unit of a Go duration", () => {
    expect(parseGoDuration(`1${name}`)).toEqual({ error: expect.stringContaining("unknown unit") });
  });

  it("is no target type whose readiness is checked", () => {
    expect(readinessChecksFor(name)).toBe(false);
  });

  it("is no placeholder of an EventBridge input template, and no field of an event", () => {
    const event = { source: "s", "detail-type": "d", detail: { a: 1 } };
    const target = {
      id: "t",
      arn: "a",
      inputTransformer: { inputPathsMap: {}, inputTemplate: `"<${name}>"` },
    };
    expect(targetInput(target, event as never, "rule")).toBe(`"<${name}>"`);
    expect(matchesPattern({ detail: ownKey(name, [{ exists: true }]) }, event)).toBe(false);
    expect(matchesPattern({ detail: ownKey(name, [{ exists: false }]) }, event)).toBe(true);
  });

  it("is no builtin, predicate or method of an Argo condition: a named ExprError, not a crash", () => {
    const refusal = (source: string) => {
      try {
        compile(source, envOf({}));
      } catch (error) {
        return error;
      }
      return undefined;
    };
    for (const [source, message] of [
      [`${name}(1)`, `unknown name ${name}`],
      [`now().${name}()`, `type time.Time has no method ${name}`],
      [`duration("1s").${name}()`, `type time.Duration has no method ${name}`],
    ] as const) {
      const error = refusal(source);
      expect(error).toBeInstanceOf(ExprError);
      expect((error as Error).message).toContain(message);
    }
  });
});
