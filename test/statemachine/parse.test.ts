import { describe, expect, it } from "vitest";
import {
  loadAnalysisTemplates,
  loadRollout,
  parseRollout,
  parseSources,
  type RolloutSpec,
  SpecError,
  type Step,
} from "../../statemachine/index.ts";

const TEMPLATE = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: success-rate}
spec:
  args:
    - name: version
    - name: address
      value: http://prom:9090
  metrics:
    - name: success-rate
      interval: 3s
      count: 2
      initialDelay: 5s
      failureLimit: 0
      successCondition: result[0] >= 0.95
      provider:
        prometheus:
          address: "{{args.address}}"
          query: sum(rate(x{version="{{args.version}}"}[20s]))
`;

const rollout = (steps: string, extra = "") => `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: demo, labels: {team: payments}}
spec:
  replicas: 4
  selector: {matchLabels: {app: demo}}
  template:
    metadata: {labels: {app: demo}}
    spec: {containers: [{name: app, image: "app:2"}]}
  strategy:
    canary:
${extra}      steps:
${steps}
`;

/** Parses and returns the problems' lines, failing the test if parsing succeeded. */
function problemsOf(sources: Array<{ file: string; text: string }>): string[] {
  try {
    parseRollout(sources);
  } catch (error) {
    expect(error).toBeInstanceOf(SpecError);
    return (error as SpecError).message.split("\n");
  }
  throw new Error("expected a SpecError");
}

const stepsOf = (spec: RolloutSpec) => spec.steps.map((s: Step) => s.kind);

describe("Argo Rollouts objects", () => {
  it("parse the seed example into steps with args substituted and Argo's defaults", () => {
    const { spec } = parseRollout([
      {
        file: "r.yaml",
        text: rollout(`        - setWeight: 25
        - analysis:
            templates: [{templateName: success-rate}]
            args: [{name: version, value: v2}]
        - setWeight: 50
        - pause: {duration: 2s}
        - pause: {}`),
      },
      { file: "t.yaml", text: TEMPLATE },
    ]);
    expect(spec.name).toBe("demo");
    expect(spec.strategy).toBe("canary");
    expect(spec.replicas).toBe(4);
    expect(spec.maxSurge).toBe(1);
    expect(spec.trafficRouting).toBe(false);
    expect(spec.image).toBe("app:2");
    expect(spec.revision).toMatch(/^[0-9a-f]{10}$/);
    expect(stepsOf(spec)).toEqual(["setWeight", "analysis", "setWeight", "pause", "pause"]);
    expect(spec.steps[3]).toEqual({ kind: "pause", duration: 2, reason: "CanaryPauseStep" });
    expect(spec.steps[4]).toEqual({ kind: "pause", reason: "CanaryPauseStep" });
    const analysis = spec.steps[1];
    if (analysis?.kind !== "analysis") throw new Error("step 1 is not an analysis");
    const metric = analysis.analysis.templates[0]?.metrics[0];
    expect(metric).toMatchObject({
      name: "success-rate",
      interval: 3,
      count: 2,
      initialDelay: 5,
      failureLimit: 0,
      inconclusiveLimit: 0,
      consecutiveErrorLimit: 4,
      consecutiveSuccessLimit: 0,
      measurementRetention: 10,
      dryRun: false,
      provider: {
        prometheus: { address: "http://prom:9090", query: 'sum(rate(x{version="v2"}[20s]))', timeout: 30 },
      },
    });
    expect(analysis.analysis.args).toEqual({ version: "v2", address: "http://prom:9090" });
  });

  it("give the same revision for the same template in YAML and JSON, and a new one when it changes", () => {
    const template = {
      metadata: { labels: { app: "demo" } },
      spec: { containers: [{ name: "app", image: "app:2" }] },
    };
    const json = (image: string) =>
      JSON.stringify({
        apiVersion: "argoproj.io/v1alpha1",
        kind: "Rollout",
        metadata: { name: "demo" },
        spec: {
          replicas: 4,
          template: { ...template, spec: { containers: [{ name: "app", image }] } },
          strategy: { canary: { steps: [{ setWeight: 25 }] } },
        },
      });
    const yaml = parseRollout([{ file: "r.yaml", text: rollout("        - setWeight: 25") }]).spec;
    expect(parseRollout([{ file: "r.json", text: json("app:2") }]).spec.revision).toBe(yaml.revision);
    expect(parseRollout([{ file: "r.json", text: json("app:3") }]).spec.revision).not.toBe(yaml.revision);
  });

  it("substitute argument values verbatim, quotes included, without breaking the template", () => {
    const { spec } = parseRollout([
      {
        file: "r.yaml",
        text: rollout(`        - analysis:
            templates: [{templateName: success-rate}]
            args: [{name: version, value: 'v2", evil="1'}]`),
      },
      { file: "t.yaml", text: TEMPLATE },
    ]);
    const step = spec.steps[0];
    if (step?.kind !== "analysis") throw new Error("not an analysis");
    expect(step.analysis.templates[0]?.metrics[0]?.provider.prometheus?.query).toBe(
      'sum(rate(x{version="v2\\", evil=\\"1"}[20s]))'.replace(/\\/g, ""),
    );
  });

  it("leave podTemplateHashValue Latest for the analysis to resolve, and read fieldRef from the Rollout", () => {
    const template = TEMPLATE.replace(
      "    - name: address\n      value: http://prom:9090\n",
      "    - name: address\n",
    );
    const { spec } = parseRollout([
      {
        file: "r.yaml",
        text: rollout(`        - analysis:
            templates: [{templateName: success-rate}]
            args:
              - {name: version, valueFrom: {podTemplateHashValue: Latest}}
              - {name: address, valueFrom: {fieldRef: {fieldPath: "metadata.labels['team']"}}}`),
      },
      { file: "t.yaml", text: template },
    ]);
    const step = spec.steps[0];
    if (step?.kind !== "analysis") throw new Error("not an analysis");
    expect(step.analysis.args).toEqual({ version: "{{rollout.latest}}", address: "payments" });
    expect(step.analysis.templates[0]?.metrics[0]?.provider.prometheus?.query).toBe(
      'sum(rate(x{version="{{rollout.latest}}"}[20s]))',
    );
  });

  it("apply dryRun and measurementRetention by metric name pattern, and start background analysis at its step", () => {
    const { spec } = parseRollout([
      {
        file: "r.yaml",
        text: rollout(
          `        - setWeight: 25
        - setWeight: 50`,
          `      analysis:
        startingStep: 1
        templates: [{templateName: success-rate}]
        args: [{name: version, value: v2}]
        dryRun: [{metricName: "success.*"}]
        measurementRetention: [{metricName: success-rate, limit: 20}]
      maxSurge: "50%"
`,
        ),
      },
      { file: "t.yaml", text: TEMPLATE },
    ]);
    expect(spec.maxSurge).toBe(2);
    expect(spec.backgroundAnalysis?.startingStep).toBe(1);
    expect(spec.backgroundAnalysis?.analysis.templates[0]?.metrics[0]).toMatchObject({
      dryRun: true,
      measurementRetention: 20,
    });
  });

  it("compile blue/green into preview, pre-promotion analysis, pause, switch and post-promotion analysis", async () => {
    const { spec } = await loadRollout(["examples/blue-green.yaml"]);
    expect(spec.strategy).toBe("blueGreen");
    expect(spec.trafficRouting).toBe(true);
    expect(spec.activeService).toBe("checkout-active");
    expect(spec.scaleDownDelaySeconds).toBe(600);
    expect(spec.steps.map((s) => (s.kind === "analysis" ? s.origin : s.kind))).toEqual([
      "preview",
      "prePromotionAnalysis",
      "pause",
      "setWeight",
      "postPromotionAnalysis",
    ]);
    expect(spec.steps[2]).toEqual({ kind: "pause", reason: "BlueGreenPause" });
    expect(spec.steps[3]).toEqual({ kind: "setWeight", weight: 100 });
  });

  it("skip other Kubernetes kinds with a note, and read kubectl Lists", () => {
    const list = JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: [
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg" } },
        {
          apiVersion: "argoproj.io/v1alpha1",
          kind: "Rollout",
          metadata: { name: "listed" },
          spec: { template: {}, strategy: { canary: { steps: [{ setWeight: 10 }] } } },
        },
      ],
    });
    const { spec, notes } = parseRollout([{ file: "list.json", text: list }]);
    expect(spec.name).toBe("listed");
    expect(notes).toEqual(["list.json: document 1: skipped ConfigMap cfg (not a rollout object)"]);
  });

  it("support header and mirror routes", () => {
    const { spec } = parseRollout([
      {
        file: "r.yaml",
        text: rollout(`        - setHeaderRoute:
            name: testers
            match: [{headerName: X-Team, headerValue: {exact: qa}}]
        - setMirrorRoute: {name: shadow, percentage: 50}
        - setHeaderRoute: {name: testers}`),
      },
    ]);
    expect(spec.steps).toEqual([
      {
        kind: "setHeaderRoute",
        name: "testers",
        match: [{ headerName: "X-Team", headerValue: { exact: "qa" } }],
      },
      { kind: "setMirrorRoute", name: "shadow", percentage: 50 },
      { kind: "setHeaderRoute", name: "testers" },
    ]);
  });
});

describe("the native spec", () => {
  it("expands percentages with bake, gate, testers and approvals", async () => {
    const { spec } = await loadRollout(["examples/native.yaml"]);
    expect(spec.source).toBe("native");
    expect(spec.testers).toEqual({ header: "x-canary", value: "always" });
    expect(spec.scaleDownDelaySeconds).toBe(1800);
    const kinds = spec.steps.map((s) =>
      s.kind === "setWeight"
        ? s.weight
        : s.kind === "pause"
          ? s.reason === "Approval"
            ? "approve"
            : `bake${s.duration}`
          : s.kind,
    );
    expect(kinds).toEqual([
      "setHeaderRoute",
      1,
      "bake600",
      "analysis",
      5,
      "bake600",
      "analysis",
      25,
      "bake600",
      "analysis",
      "approve",
      50,
      "bake600",
      "analysis",
      100,
    ]);
  });

  it("makes blue/green a preview, an approval at 0 and one switch", () => {
    const { spec } = parseRollout([
      { file: "n.yaml", text: "name: web\nstrategy: blueGreen\napprovalsBetween: ['0']\n" },
    ]);
    expect(spec.steps).toEqual([
      { kind: "preview" },
      { kind: "pause", reason: "Approval" },
      { kind: "setWeight", weight: 100 },
    ]);
  });

  it("takes an explicit Argo-shaped step list", () => {
    const { spec } = parseRollout([
      {
        file: "n.yaml",
        text: "name: web\nsteps:\n  - setWeight: 10\n  - pause: {duration: 1m}\n  - setWeight: 100\n",
      },
    ]);
    expect(spec.steps[1]).toEqual({ kind: "pause", duration: 60, reason: "CanaryPauseStep" });
  });
});

describe("bad input: one message per problem, naming the place", () => {
  it("an unreadable file", async () => {
    await expect(loadRollout(["does/not/exist.yaml"])).rejects.toThrow(
      "does/not/exist.yaml: cannot read the file: no such file",
    );
  });

  it("bad YAML, with the document, line and column", () => {
    const lines = problemsOf([{ file: "bad.yaml", text: "name: a\n---\nkind: [unclosed\n" }]);
    expect(lines[0]).toMatch(/^bad\.yaml: document 2: not valid YAML or JSON at line \d+, column \d+: /);
  });

  it("a file with no rollout in it", () => {
    expect(problemsOf([{ file: "t.yaml", text: TEMPLATE }])).toEqual([
      "t.yaml: no rollout found: give an argoproj.io/v1alpha1 Rollout or a native spec (a document with a name and steps)",
    ]);
  });

  it("an empty file", () => {
    expect(problemsOf([{ file: "empty.yaml", text: "" }])).toEqual([
      "empty.yaml: the file holds no document",
    ]);
  });

  it("a missing template, with the step", () => {
    const lines = problemsOf([
      {
        file: "r.yaml",
        text: rollout("        - setWeight: 5\n        - analysis: {templates: [{templateName: nope}]}"),
      },
    ]);
    expect(lines).toEqual([
      'r.yaml: document 1 (Rollout demo): spec.strategy.canary.steps[1].analysis.templates[0].templateName (step 2): AnalysisTemplate "nope" not found in the files given',
    ]);
  });

  it("a missing arg", () => {
    const lines = problemsOf([
      { file: "r.yaml", text: rollout("        - analysis: {templates: [{templateName: success-rate}]}") },
      { file: "t.yaml", text: TEMPLATE },
    ]);
    expect(lines).toEqual([
      'r.yaml: document 1 (Rollout demo): spec.strategy.canary.steps[0].analysis.args (step 1): template "success-rate": args.version was not resolved: give it a value in the step\'s args',
    ]);
  });

  it("a Secret is refused where it is named: the template's declaration, or the step's args", () => {
    const fromSecret = "valueFrom: {secretKeyRef: {name: s, key: k}}";
    const declared = problemsOf([
      {
        file: "r.yaml",
        text: rollout(
          "        - analysis: {templates: [{templateName: success-rate}], args: [{name: version, value: v2}]}",
        ),
      },
      { file: "t.yaml", text: TEMPLATE.replace("      value: http://prom:9090", `      ${fromSecret}`) },
    ]);
    expect(declared).toEqual([
      't.yaml: document 1 (AnalysisTemplate success-rate): spec.args[1].valueFrom.secretKeyRef: template "success-rate": args.address: secretKeyRef is not supported; keep secrets in AWS Secrets Manager and give the provider a role',
    ]);
    const given = problemsOf([
      {
        file: "r.yaml",
        text: rollout(
          `        - analysis: {templates: [{templateName: success-rate}], args: [{name: address, value: a}, {name: version, ${fromSecret}}]}`,
        ),
      },
      { file: "t.yaml", text: TEMPLATE },
    ]);
    expect(given).toEqual([
      'r.yaml: document 1 (Rollout demo): spec.strategy.canary.steps[0].analysis.args[1].valueFrom.secretKeyRef (step 1): template "success-rate": args.version: secretKeyRef is not supported; keep secrets in AWS Secrets Manager and give the provider a role',
    ]);
  });

  it.each(["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf"])(
    "an arg named as what every object inherits (%s) is one the template does not declare",
    (name) => {
      const lines = problemsOf([
        { file: "r.yaml", text: rollout("        - analysis: {templates: [{templateName: success-rate}]}") },
        {
          file: "t.yaml",
          text: TEMPLATE.replace("    - name: version\n", "").replace("{{args.version}}", `{{args.${name}}}`),
        },
      ]);
      expect(lines).toEqual([
        `t.yaml: document 1 (AnalysisTemplate success-rate): spec.metrics[0]: {{args.${name}}} is used but template "success-rate" declares no arg "${name}"`,
      ]);
    },
  );

  it("a wrong type", () => {
    const lines = problemsOf([{ file: "r.yaml", text: rollout('        - setWeight: "25"') }]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^r\.yaml: document 1 \(Rollout demo\): spec\.strategy\.canary\.steps\[0\]\.setWeight \(step 1\): .*number/,
    );
  });

  it("rejected steps say why, with the step number", () => {
    const lines = problemsOf([
      {
        file: "r.yaml",
        text: rollout(
          "        - setWeight: 5\n        - experiment: {templates: [{name: c, specRef: canary, weight: 5}]}\n        - setCanaryScale: {replicas: 1}",
        ),
      },
    ]);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain(
      'spec.strategy.canary.steps[1].experiment.templates[0].weight (step 2): step 2 of 3: experiment template "c": experiment template weight needs a Service per template',
    );
    expect(lines[1]).toContain(
      "spec.strategy.canary.steps[2].setCanaryScale (step 3): step 3 of 3: setCanaryScale requires trafficRouting",
    );
  });

  it("setCanaryScale steps with a traffic router, as Argo reads them", () => {
    const { spec } = parseRollout([
      {
        file: "r.yaml",
        text: rollout(
          [
            "        - setCanaryScale: {replicas: 2}",
            "        - setCanaryScale: {weight: 150}",
            "        - setCanaryScale: {matchTrafficWeight: true}",
          ].join("\n"),
          "      trafficRouting: {istio: {virtualService: {name: demo}}}\n",
        ),
      },
    ]);
    expect(spec.steps).toEqual([
      { kind: "setCanaryScale", replicas: 2 },
      { kind: "setCanaryScale", weight: 150 },
      { kind: "setCanaryScale", matchTrafficWeight: true },
    ]);
  });

  it("setCanaryScale's fields are checked with their path", () => {
    const lines = problemsOf([
      {
        file: "r.yaml",
        text: rollout(
          "        - setCanaryScale: {replicas: -1, pods: 2}",
          "      trafficRouting: {istio: {virtualService: {name: demo}}}\n",
        ),
      },
    ]);
    expect(lines.join("\n")).toContain("spec.strategy.canary.steps[0].setCanaryScale");
    expect(lines.join("\n")).toMatch(/replicas|pods/);
  });

  it("a rejected action paired with a route in one step (as Argo allows) is named, not counted", () => {
    const lines = problemsOf([
      {
        file: "r.yaml",
        text: rollout(
          "        - plugin: {name: p}\n          setHeaderRoute: {name: h}\n        - pause: {}",
          "      trafficRouting: {managedRoutes: [{name: h}], istio: {virtualService: {name: v}}}\n",
        ),
      },
    ]);
    expect(lines).toEqual([
      "r.yaml: document 1 (Rollout demo): spec.strategy.canary.steps[0].plugin (step 1): step 1 of 2: plugin steps are not supported",
    ]);
  });

  it("setCanaryScale paired with a route in one step (as Argo allows) is asked for as two steps", () => {
    const lines = problemsOf([
      {
        file: "r.yaml",
        text: rollout(
          "        - setCanaryScale: {replicas: 1}\n          setHeaderRoute: {name: h}\n        - pause: {}",
          "      trafficRouting: {managedRoutes: [{name: h}], istio: {virtualService: {name: v}}}\n",
        ),
      },
    ]);
    expect(lines).toEqual([
      'r.yaml: document 1 (Rollout demo): spec.strategy.canary.steps[0] (step 1): a step has exactly one action, this one has "setCanaryScale", "setHeaderRoute": write each as a step of its own',
    ]);
  });

  it("traffic routers no target drives are refused at their field, by name; Istio's subset split too", () => {
    const routed = (routing: string) =>
      problemsOf([
        { file: "r.yaml", text: rollout("        - setWeight: 5", `      trafficRouting: ${routing}\n`) },
      ]);
    const names: Array<[string, string]> = [
      ["smi: {rootService: root}", "smi: SMI (the Service Mesh Interface's TrafficSplit, as Linkerd routes)"],
      ["appMesh: {virtualService: {name: v}}", "appMesh: AWS App Mesh"],
      ["ambassador: {mappings: [m]}", "ambassador: Ambassador (Emissary-ingress)"],
      ["apisix: {route: {name: r}}", "apisix: Apache APISIX"],
      ["traefik: {weightedTraefikServiceName: t}", "traefik: Traefik"],
    ];
    for (const [routing, named] of names) {
      expect(routed(`{${routing}}`)).toEqual([
        `r.yaml: document 1 (Rollout demo): spec.strategy.canary.trafficRouting.${named} is not a traffic router sfn-rollouts drives: route with alb, istio, nginx or the Gateway API (plugins: argoproj-labs/gatewayAPI), or drive it from a target plugin (docs/traffic.md, "Target plugins") with a trafficRouting.plugins entry`,
      ]);
    }
    expect(
      routed(
        "{istio: {virtualService: {name: v}, destinationRule: {name: d, canarySubsetName: c, stableSubsetName: s}}}",
      ),
    ).toEqual([
      expect.stringContaining(
        "spec.strategy.canary.trafficRouting.istio.destinationRule: Istio subset-level traffic splitting (a DestinationRule's canary and stable subsets) is not supported",
      ),
    ]);
    // The routers a target drives load, with exact weights.
    for (const routing of [
      "{istio: {virtualService: {name: v}}}",
      "{nginx: {stableIngress: i}}",
      "{alb: {ingress: i, servicePort: 80}}",
      '{plugins: {"argoproj-labs/gatewayAPI": {httpRoute: r}}}',
    ]) {
      const { spec } = parseRollout([
        { file: "r.yaml", text: rollout("        - setWeight: 5", `      trafficRouting: ${routing}\n`) },
      ]);
      expect(spec.trafficRouting).toBe(true);
    }
  });

  it("maxTrafficWeight: setWeight counts in its units, read as percents; out of range or not a whole percent is refused", () => {
    const routed = (total: string, steps: string) =>
      `      trafficRouting: {maxTrafficWeight: ${total}, nginx: {stableIngress: i}}\n${steps}`;
    const weights = (total: string, steps: string) => {
      const { spec } = parseRollout([
        { file: "r.yaml", text: rollout(steps, routed(total, "").trimEnd().concat("\n")) },
      ]);
      return spec.steps.flatMap((s) => (s.kind === "setWeight" ? [s.weight] : []));
    };
    // Argo: setWeight 100 of 1000 sends 10% (and scales 10% of the pods).
    expect(
      weights("1000", "        - setWeight: 100\n        - pause: {}\n        - setWeight: 550"),
    ).toEqual([10, 55]);
    expect(weights("50", "        - setWeight: 25\n        - setWeight: 50")).toEqual([50, 100]);
    expect(weights("100", "        - setWeight: 7")).toEqual([7]);
    const lines = problemsOf([
      {
        file: "r.yaml",
        text: rollout(
          "        - setWeight: 15\n        - setWeight: 1001\n        - setWeight: 20",
          routed("1000", ""),
        ),
      },
    ]);
    expect(lines).toEqual([
      "r.yaml: document 1 (Rollout demo): spec.strategy.canary.steps[0].setWeight (step 1): setWeight 15 of maxTrafficWeight 1000 is 1.5% of the traffic: targets take whole percents, so use a multiple of 10",
      "r.yaml: document 1 (Rollout demo): spec.strategy.canary.steps[1].setWeight (step 2): SetWeight needs to be between 0 and 1000 (maxTrafficWeight)",
    ]);
    expect(
      problemsOf([{ file: "r.yaml", text: rollout("        - setWeight: 5", routed("0", "")) }]),
    ).toEqual([
      "r.yaml: document 1 (Rollout demo): spec.strategy.canary.trafficRouting.maxTrafficWeight: maxTrafficWeight must be a whole number of at least 1, got 0",
    ]);
  });

  it("unknown fields in a step and unknown steps", () => {
    const lines = problemsOf([
      {
        file: "r.yaml",
        text: rollout("        - pause: {duration: 2s, until: later}\n        - setWieght: 5"),
      },
    ]);
    expect(lines).toEqual([
      'r.yaml: document 1 (Rollout demo): spec.strategy.canary.steps[0].pause (step 1): unknown field "until"',
      'r.yaml: document 1 (Rollout demo): spec.strategy.canary.steps[1].setWieght (step 2): unknown step "setWieght": use one of setWeight, pause, analysis, experiment, setHeaderRoute, setMirrorRoute, setCanaryScale',
    ]);
  });

  it("an invalid pause duration", () => {
    expect(problemsOf([{ file: "r.yaml", text: rollout("        - pause: {duration: 5 minutes}") }])).toEqual(
      [
        'r.yaml: document 1 (Rollout demo): spec.strategy.canary.steps[0].pause.duration (step 1): unknown unit " minutes" in duration "5 minutes": units are ns, us, ms, s, m and h, written without spaces as in "30s", "1.5h", "2h45m" (a day is "24h")',
      ],
    );
  });

  it("a job provider without its spec, and Argo's metric rules, in the template's document", () => {
    const template = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: bad}
spec:
  metrics:
    - name: job
      provider: {job: {metadata: {labels: {app: smoke}}}}
    - name: no-interval
      count: 3
      successCondition: result[0] > 1
      provider: {web: {url: http://x}}
    - name: both-disabled
      failureLimit: -1
      provider: {web: {url: http://x}}
    - name: too-few
      interval: 1s
      count: 2
      failureLimit: 2
      consecutiveSuccessLimit: 1
      provider: {web: {url: http://x}}
    - name: syntax
      successCondition: result[0] >=
      provider: {web: {url: http://x}}
`;
    const lines = problemsOf([
      { file: "r.yaml", text: rollout("        - analysis: {templates: [{templateName: bad}]}") },
      { file: "t.yaml", text: template },
    ]);
    expect(lines[0]).toBe(
      "t.yaml: document 1 (AnalysisTemplate bad): spec.metrics[0].provider.job.spec: Invalid input: expected record, received undefined",
    );
    expect(lines).toContain(
      "t.yaml: document 1 (AnalysisTemplate bad): spec.metrics[1].interval: interval must be specified when count > 1",
    );
    expect(lines).toContain(
      "t.yaml: document 1 (AnalysisTemplate bad): spec.metrics[2].failureLimit: failureLimit and consecutiveSuccessLimit cannot both be disabled",
    );
    expect(lines).toContain(
      "t.yaml: document 1 (AnalysisTemplate bad): spec.metrics[3].count: count (2) must be >= failureLimit + consecutiveSuccessLimit (2 + 1) if both >= 0",
    );
    const syntax = lines.find((l) => l.includes("spec.metrics[4].successCondition"));
    expect(syntax).toMatch(/template "bad", metric "syntax": /);
  });

  it("a Prometheus rangeQuery that no measurement could read is refused where it is written", () => {
    const template = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: ranges}
spec:
  args: [{name: lookback}]
  metrics:
    - name: bad-step
      provider:
        prometheus:
          address: http://prom:9090
          query: up
          rangeQuery: {start: 'now() - duration("10m")', end: now(), step: 1d}
    - name: zero-step
      provider:
        prometheus: {address: http://prom:9090, query: up, rangeQuery: {start: now(), end: now(), step: "0s"}}
    - name: bad-start
      provider:
        prometheus: {address: http://prom:9090, query: up, rangeQuery: {start: "now() -", end: now(), step: 1m}}
    - name: no-end
      provider:
        prometheus: {address: http://prom:9090, query: up, rangeQuery: {start: now(), step: 1m}}
    - name: templated
      provider:
        prometheus:
          address: http://prom:9090
          query: up
          rangeQuery: {start: 'now() - duration("{{args.lookback}}")', end: now(), step: "{{args.lookback}}"}
`;
    const lines = problemsOf([
      {
        file: "r.yaml",
        text: rollout(
          "        - analysis: {templates: [{templateName: ranges}], args: [{name: lookback, value: 5m}]}",
        ),
      },
      { file: "t.yaml", text: template },
    ]);
    const at = "t.yaml: document 1 (AnalysisTemplate ranges): spec.metrics";
    expect(lines).toContain(
      `${at}[0].provider.prometheus.rangeQuery.step: template "ranges", metric "bad-step": time: unknown unit "d" in duration "1d"`,
    );
    expect(lines).toContain(
      `${at}[1].provider.prometheus.rangeQuery.step: template "ranges", metric "zero-step": step must be a positive duration (e.g. 30s, 1m), got "0s"`,
    );
    expect(
      lines.some((l) =>
        l.startsWith(
          `${at}[2].provider.prometheus.rangeQuery.start: template "ranges", metric "bad-start": `,
        ),
      ),
    ).toBe(true);
    expect(lines.some((l) => l.startsWith(`${at}[3].provider.prometheus.rangeQuery.end`))).toBe(true);
    expect(lines.some((l) => l.includes("metrics[4]"))).toBe(false);
  });

  it("collects every problem of a file, not only the first", () => {
    const lines = problemsOf([
      {
        file: "r.yaml",
        text: rollout(
          "        - setWeight: 500\n        - pause: {duration: soon}\n        - experiment: {}",
        ),
      },
    ]);
    expect(lines.map((l) => /\(step (\d)\)/.exec(l)?.[1])).toEqual(["1", "2", "3"]);
  });

  it("duplicate metric names across templates", () => {
    const again = TEMPLATE.replace("name: success-rate}", "name: again}");
    const lines = problemsOf([
      {
        file: "r.yaml",
        text: rollout(`        - analysis:
            templates: [{templateName: success-rate}, {templateName: again}]
            args: [{name: version, value: v2}]`),
      },
      { file: "t.yaml", text: TEMPLATE },
      { file: "u.yaml", text: again },
    ]);
    expect(lines).toEqual([
      'u.yaml: document 1 (AnalysisTemplate again): spec.metrics[0].name: metric "success-rate" is also defined in template "success-rate": metric names must be unique in one analysis',
    ]);
  });

  it("native percentages that do not increase, do not end at 100, and approvals that match no step", () => {
    const lines = problemsOf([
      { file: "n.yaml", text: "name: web\nsteps: [10, 5, 50]\napprovalsBetween: ['7']\n" },
    ]);
    expect(lines).toEqual([
      "n.yaml: document 1 (Rollout web): steps[1] (step 2): percentages must increase: 5 after 10",
      "n.yaml: document 1 (Rollout web): steps[2]: the last percentage must be 100",
      'n.yaml: document 1 (Rollout web): approvalsBetween: "7" is not "0" nor the percentage of a step before the last (10, 5)',
    ]);
  });

  it("native unknown fields and wrong enum values", () => {
    const lines = problemsOf([{ file: "n.yaml", text: "name: web\nonFailure: retry\nbakee: 1m\n" }]);
    expect(lines).toEqual([
      'n.yaml: document 1: onFailure: Invalid option: expected one of "rollback"|"stop"|"rollback-wave"|"rollback-all"',
      'n.yaml: document 1: unknown field "bakee"',
    ]);
  });

  it("several rollouts where one is expected", () => {
    const lines = problemsOf([{ file: "a.yaml", text: "name: one\n---\nname: two\n" }]);
    expect(lines).toEqual(["a.yaml: several rollouts found (one, two): give one per command"]);
  });

  it("a document that is neither a Kubernetes object nor a native spec", () => {
    expect(problemsOf([{ file: "x.yaml", text: "- 1\n- 2\n" }])).toEqual([
      "x.yaml: document 1: not a Kubernetes object (no kind) nor a native rollout spec (no name)",
    ]);
  });
});

describe("loadAnalysisTemplates (rollouts analyze)", () => {
  it("resolves every template in the files with the given args", async () => {
    const analysis = await loadAnalysisTemplates(["examples/analysis-success-rate.yaml"], { version: "v3" });
    expect(analysis.templates[0]?.metrics[0]?.provider.prometheus?.query).toContain('version="v3"');
  });

  it("names the arg that is missing", async () => {
    await expect(loadAnalysisTemplates(["examples/analysis-success-rate.yaml"], {})).rejects.toThrow(
      'template "success-rate": args.version was not resolved',
    );
  });

  it("parses a file with only templates without asking for a rollout", () => {
    expect(
      parseSources([{ file: "t.yaml", text: TEMPLATE }]).templates.has("AnalysisTemplate/success-rate"),
    ).toBe(true);
  });
});
