import { re2Subjects } from "@sfn-rollouts/test-support/regex-engines";
import { describe, expect, it } from "vitest";
import { matchesRoute } from "../../local/proxy/config.ts";
import { compileCondition, parseRollout, SpecError } from "../../statemachine/index.ts";
import { re2FullMatch, re2Search } from "../../statemachine/re2.ts";

/** A regular expression that takes exponential time in a backtracking engine. */
const REDOS = "^(a+)+$";
const HOSTILE = `${"a".repeat(30_000)}!`;

const rollout = (analysis: string) => `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: demo}
spec:
  template: {spec: {containers: [{name: app, image: "app:2"}]}}
  strategy:
    canary:
      steps:
        - setWeight: 25
        - analysis:
            templates: [{templateName: t}]
${analysis}
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: t}
spec:
  dryRun: [{metricName: "^error"}]
  metrics:
    - {name: success-rate, provider: {web: {url: "http://x"}}}
    - {name: error-rate, provider: {web: {url: "http://x"}}}
    - {name: errors, provider: {web: {url: "http://x"}}}
`;

function problems(text: string): string[] {
  try {
    parseRollout([{ file: "r.yaml", text }]);
  } catch (error) {
    expect(error).toBeInstanceOf(SpecError);
    return (error as SpecError).problems.map((p) => `${p.path}: ${p.message}`);
  }
  throw new Error("expected a SpecError");
}

describe("regular expressions run on RE2, as Go's regexp runs them for Argo", () => {
  it("a ReDoS pattern runs on RE2 in the evaluator, the loader and the proxy", () => {
    // A short subject first: a backtracking engine would still return on it, so a call site that
    // used one fails here, at once, instead of hanging on the hostile subject below.
    const SHORT = "aaaa!";
    const condition = compileCondition(`result matches "${REDOS}"`);
    const route = { name: "t", match: [{ headerName: "x", headerValue: { regex: REDOS } }] };
    expect(re2Subjects(REDOS, () => expect(condition.evaluate(SHORT)).toBe(false))).toContain(SHORT);
    expect(re2Subjects(REDOS, () => expect(re2Search(REDOS, SHORT)).toBe(false))).toContain(SHORT);
    expect(re2Subjects(REDOS, () => expect(matchesRoute(route, { x: SHORT })).toBe(false))).toContain(SHORT);
    expect(
      re2Subjects(REDOS, () =>
        expect(problems(rollout(`            dryRun: [{metricName: "${REDOS}"}]`))).toEqual([
          "spec.strategy.canary.steps[1].analysis.dryRun: dryRun[0]: Rule didn't match any metric name(s)",
        ]),
      ),
    ).toEqual(expect.arrayContaining(["success-rate", "error-rate", "errors"]));

    // RE2's time is linear in the subject, so the hostile one returns, where backtracking would
    // take centuries.
    expect(condition.evaluate(HOSTILE)).toBe(false);
    expect(re2Search(REDOS, HOSTILE)).toBe(false);
    expect(matchesRoute(route, { x: HOSTILE })).toBe(false);
  });

  it("matches as Go does: anywhere in the text for conditions and rules, the whole value for a router", () => {
    expect(compileCondition('result matches "b+"').evaluate("abbbc")).toBe(true);
    expect(re2Search("^err", "errors")).toBe(true);
    expect(re2FullMatch("ab+", "abbbc")).toBe(false);
    expect(re2FullMatch("ab+c", "abbbc")).toBe(true);
  });

  it("refuses what RE2 refuses (backreferences, lookaround) with Go's message", () => {
    expect(() => compileCondition('result matches "(a)\\\\1"').evaluate("aa")).toThrow(
      /error parsing regexp: invalid escape sequence: `\\1`/,
    );
    expect(() => re2Search("(?=a)", "a")).toThrow(
      /error parsing regexp: invalid or unsupported Perl syntax: `\(\?=`/,
    );
  });
});

describe("Argo's dry-run and retention rules, checked when the spec is loaded", () => {
  it("applies the step's rules and every template's to every metric of the run", () => {
    const { spec } = parseRollout([
      {
        file: "r.yaml",
        text: rollout(`            dryRun: [{metricName: "success"}]
            measurementRetention: [{metricName: "rate$", limit: 3}, {metricName: "^error-rate$", limit: 7}]`),
      },
    ]);
    const step = spec.steps[1];
    if (step?.kind !== "analysis") throw new Error("analysis");
    expect(
      step.analysis.templates[0]?.metrics.map((m) => [m.name, m.dryRun, m.measurementRetention]),
    ).toEqual([
      ["success-rate", true, 3],
      ["error-rate", true, 7],
      ["errors", true, 10],
    ]);
  });

  it("refuses a rule that matches no metric, and two rules with one name, with Argo's messages", () => {
    expect(
      problems(
        rollout(`            dryRun: [{metricName: "^error"}, {metricName: latency}]
            measurementRetention: [{metricName: "(", limit: 2}]`),
      ),
    ).toEqual([
      "spec.strategy.canary.steps[1].analysis.dryRun: dryRun[1]: Rule didn't match any metric name(s)",
      "spec.strategy.canary.steps[1].analysis.dryRun: two Dry-Run metric rules have the same name '^error'",
      "spec.strategy.canary.steps[1].analysis.measurementRetention: measurementRetention[0]: Rule didn't match any metric name(s)",
    ]);
  });

  it("refuses a header route whose regex RE2 cannot compile", () => {
    const text = `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: demo}
spec:
  template: {spec: {containers: [{name: app, image: "app:2"}]}}
  strategy:
    canary:
      trafficRouting: {alb: {ingress: demo}}
      steps:
        - setHeaderRoute: {name: t, match: [{headerName: x, headerValue: {regex: "(?<=a)b"}}]}
`;
    expect(problems(text)).toEqual([
      "spec.strategy.canary.steps[0].setHeaderRoute.match[0].headerValue.regex: error parsing regexp: invalid named capture: `(?<=a)b`",
    ]);
  });
});
