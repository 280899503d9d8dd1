import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { run } from "@sfn-rollouts/test-support/cli";
import { describe, expect, it } from "vitest";

/**
 * Every YAML manifest under Argo Rollouts' `examples/` (test/fixtures/argo-examples/, copied
 * unchanged, README.md there) through `rollouts plan`, with one expected outcome per file:
 *
 * - `plans`: the plan Argo Rollouts runs. Pod counts are Argo's: a basic canary (no
 *   trafficRouting) gives the candidate `replicas × weight / 100` whole pods and the stable
 *   version the rest, as `CalculateReplicaCountsForBasicCanary` in Argo's
 *   `utils/replicaset/canary.go` does when the weight is a whole number of pods (5 replicas at
 *   20/40/60/80% are 1+4, 2+3, 3+2, 4+1); a blue/green preview is the full `replicas` with no
 *   traffic until promotion (`previewReplicaCount` unset), the old pods kept for
 *   `scaleDownDelaySeconds` after the switch; a canary with no steps is Argo's rolling update,
 *   promoted at once (`examples/rollout-rolling-update.yaml`'s own comment).
 * - `refused`: every problem `rollouts plan` reports, by file and field path, each naming what is
 *   not supported.
 * - `usedBy`: a file with no Rollout, loaded alongside the examples that use it (their templates,
 *   Services, routes, the notification ConfigMap), as Argo's docs apply them together.
 * - `alone`: a file no example Rollout uses.
 */

const DIR = "test/fixtures/argo-examples";

/** A plan row: what the step does, the weight after it, candidate pods, stable pods. */
type Row = [detail: string, weight: number, canaryPods: number, stablePods: number];

interface Plans {
  plans: { strategy: "canary" | "blueGreen"; replicas: number; trafficRouting: boolean; steps: Row[] };
}
interface Refusal {
  /** The file the problem is in (a template's problem is in the template's file). */
  file: string;
  path: string;
  /** What the message names: the router, the provider, the step, the field. */
  names: string;
  /** The feature being added that will lift this refusal. */
}
interface Refused {
  refused: Refusal[];
}
interface UsedBy {
  usedBy: string[];
}
interface Alone {
  alone: string;
}
type Outcome = Plans | Refused | UsedBy | Alone;

const ROUTER_FIX = "is not a traffic router sfn-rollouts drives";

/** Argo's basic canary of 5 replicas, with these pauses after 20, 40, 60 and 80%. */
const fiveReplicaCanary = (pauses: string[]): Row[] =>
  [20, 40, 60, 80].flatMap((w, i): Row[] => [
    [`setWeight: ${w}`, w, w / 20, 5 - w / 20],
    [`pause: ${pauses[i]}`, w, w / 20, 5 - w / 20],
  ]);

const EXAMPLES: Record<string, Outcome> = {
  "ambassador/echo-mapping.yaml": { usedBy: ["ambassador/rollout.yaml"] },
  "ambassador/echo-service.yaml": { usedBy: ["ambassador/rollout.yaml"] },
  "ambassador/resolver.yaml": { usedBy: ["ambassador/rollout.yaml"] },
  "ambassador/rollout.yaml": {
    refused: [
      {
        file: "ambassador/rollout.yaml",
        path: "spec.strategy.canary.trafficRouting.ambassador",
        names: `Ambassador (Emissary-ingress) ${ROUTER_FIX}`,
      },
    ],
  },
  "analysis-templates.yaml": {
    usedBy: [
      "rollout-analysis-step.yaml",
      "rollout-background-analysis.yaml",
      "rollout-experiment-step.yaml",
      "experiment-with-analysis.yaml",
    ],
  },
  "apisix/route.yaml": { usedBy: ["apisix/rollout.yaml"] },
  "apisix/services.yaml": { usedBy: ["apisix/rollout.yaml"] },
  "apisix/rollout.yaml": {
    refused: [
      {
        file: "apisix/rollout.yaml",
        path: "spec.strategy.canary.trafficRouting.apisix",
        names: `Apache APISIX ${ROUTER_FIX}`,
      },
      {
        // Argo runs both actions of this step; here each is a step of its own.
        file: "apisix/rollout.yaml",
        path: "spec.strategy.canary.steps[0]",
        names: '"setCanaryScale", "setHeaderRoute": write each as a step of its own',
      },
    ],
  },
  "appmesh/canary-service.yaml": { usedBy: ["appmesh/canary-rollout.yaml"] },
  "appmesh/canary-rollout.yaml": {
    refused: [
      {
        file: "appmesh/canary-rollout.yaml",
        path: "spec.strategy.canary.trafficRouting.appMesh",
        names: `AWS App Mesh ${ROUTER_FIX}`,
      },
    ],
  },
  "cluster-analysis-templates.yaml": { usedBy: ["rollout-analysis-step.yaml"] },
  "experiment-with-analysis.yaml": {
    refused: [
      { file: "experiment-with-analysis.yaml", path: "kind", names: "Experiment objects are not supported" },
    ],
  },
  "istio/istio-mirror.yaml": {
    // setCanaryScale weight 50 of 4 replicas: ceil(4 × 50 / 100) = 2 canary pods with no traffic,
    // the stable ReplicaSet kept whole behind the router (Argo's GetCanaryReplicasOrWeight).
    plans: {
      strategy: "canary",
      replicas: 4,
      trafficRouting: true,
      steps: [
        ["setCanaryScale: canary pods for 50% of the replicas, whatever the weight", 0, 2, 4],
        ["setMirrorRoute mirror-route: mirror 50% of matching requests", 0, 2, 4],
        ["pause: until rollouts promote", 0, 2, 4],
      ],
    },
  },
  "istio/istio-subset-split.yaml": {
    refused: [
      {
        file: "istio/istio-subset-split.yaml",
        path: "spec.strategy.canary.trafficRouting.istio.destinationRule",
        names:
          "Istio subset-level traffic splitting (a DestinationRule's canary and stable subsets) is not supported",
      },
    ],
  },
  "notifications/configmap.yaml": { usedBy: ["notifications/rollout-canary.yaml"] },
  "notifications/kustomization.yaml": { usedBy: ["notifications/rollout-canary.yaml"] },
  "notifications/rollout-canary.yaml": {
    plans: {
      strategy: "canary",
      replicas: 5,
      trafficRouting: false,
      steps: fiveReplicaCanary(["until rollouts promote", "10s", "10s", "10s"]),
    },
  },
  "rollout-analysis-step.yaml": {
    // 25% of 4 replicas is one candidate pod; the analysis (random-fail's Job, always-pass's)
    // holds the rollout there until it completes.
    plans: {
      strategy: "canary",
      replicas: 4,
      trafficRouting: false,
      steps: [
        ["setWeight: 25", 25, 1, 3],
        ["analysis: random-fail, always-pass", 25, 1, 3],
      ],
    },
  },
  "rollout-background-analysis.yaml": {
    // random-fail's Job measures in the background from the first step on.
    plans: {
      strategy: "canary",
      replicas: 4,
      trafficRouting: false,
      steps: [
        ["setWeight: 25", 25, 1, 3],
        ["pause: until rollouts promote", 25, 1, 3],
      ],
    },
  },
  "rollout-baseline-vs-canary.yaml": {
    // Argo's experiment: a ReplicaSet per template, one pod each (GetReplicasOrDefault), next to
    // the rollout's; with neither a duration nor a required analysis it runs until promoted. The
    // rollout's own canary ReplicaSet has no pod at weight 0 (CalculateReplicaCountsForBasicCanary).
    plans: {
      strategy: "canary",
      replicas: 3,
      trafficRouting: false,
      steps: [
        ["experiment: baseline (stable, 1 pod), canary (canary, 1 pod), until rollouts promote", 0, 0, 3],
      ],
    },
  },
  "rollout-bluegreen.yaml": {
    plans: {
      strategy: "blueGreen",
      replicas: 2,
      trafficRouting: true,
      steps: [
        ["preview: 2 new pods, no live traffic", 0, 2, 2],
        ["pause: until rollouts promote", 0, 2, 2],
        ["setWeight: 100", 100, 2, 2],
      ],
    },
  },
  "rollout-canary-preview.yaml": {
    // Its experiment gives the template labels and a selector of its own (to keep the preview's
    // pods out of the Service): the experiment's pods carry the pod template's labels here.
    refused: [
      {
        file: "rollout-canary-preview.yaml",
        path: "spec.strategy.canary.steps[0].experiment.templates[0].selector",
        names: 'experiment template "canary-preview": a selector of its own is not supported',
      },
      {
        file: "rollout-canary-preview.yaml",
        path: "spec.strategy.canary.steps[0].experiment.templates[0].metadata",
        names: 'experiment template "canary-preview": labels and annotations of its own are not supported',
      },
    ],
  },
  "rollout-canary.yaml": {
    plans: {
      strategy: "canary",
      replicas: 5,
      trafficRouting: false,
      steps: fiveReplicaCanary(["until rollouts promote", "40s", "20s", "20s"]),
    },
  },
  "rollout-experiment-step.yaml": {
    // Its experiment's analysis is not requiredForCompletion (Argo's experiment then runs until
    // terminated, the analysis in its background).
    refused: [
      {
        file: "rollout-experiment-step.yaml",
        path: "spec.strategy.canary.steps[1].experiment.analyses[0].requiredForCompletion",
        names:
          'experiment analysis "random-fail": only analyses with requiredForCompletion: true are supported',
      },
    ],
  },
  "rollout-rolling-update.yaml": {
    plans: { strategy: "canary", replicas: 5, trafficRouting: false, steps: [] },
  },
  "rollout-secret.yaml": {
    refused: [
      {
        file: "rollout-secret.yaml",
        path: "spec.args[0].valueFrom.secretKeyRef",
        names: "args.secret-url: secretKeyRef is not supported; keep secrets in AWS Secrets Manager",
      },
    ],
  },
  "rollout-template-ref.yaml": {
    plans: {
      strategy: "canary",
      replicas: 5,
      trafficRouting: false,
      steps: [
        ["setWeight: 20", 20, 1, 4],
        ["pause: 10s", 20, 1, 4],
      ],
    },
  },
  // An alternative to the load-test template rollout-linkerd.yaml carries itself, which no
  // example Rollout names: loaded with it, one template would be defined twice.
  "traffic-management/job.yaml": { alone: "no rollout found" },
  "traffic-management/rollout-linkerd.yaml": {
    refused: [
      {
        file: "traffic-management/rollout-linkerd.yaml",
        path: "spec.strategy.canary.trafficRouting.smi",
        names: `SMI (the Service Mesh Interface's TrafficSplit, as Linkerd routes) ${ROUTER_FIX}`,
      },
    ],
  },
  "traffic-routing-experiment-step/istio-host-split-experiment-step.yaml": {
    refused: [
      {
        file: "traffic-routing-experiment-step/istio-host-split-experiment-step.yaml",
        path: "spec.strategy.canary.steps[1].experiment.templates[0].weight",
        names:
          'experiment template "experiment-istio": experiment template weight needs a Service per template',
      },
    ],
  },
  "traffic-routing-experiment-step/rollout-alb-experiment-step.yaml": {
    refused: [
      {
        file: "traffic-routing-experiment-step/rollout-alb-experiment-step.yaml",
        path: "spec.strategy.canary.steps[1].experiment.templates[0].weight",
        names:
          'experiment template "experiment-alb": experiment template weight needs a Service per template',
      },
    ],
  },
  "traffic-routing-experiment-step/rollout-smi-experiment-step.yaml": {
    refused: [
      {
        file: "traffic-routing-experiment-step/rollout-smi-experiment-step.yaml",
        path: "spec.strategy.canary.trafficRouting.smi",
        names: `SMI (the Service Mesh Interface's TrafficSplit, as Linkerd routes) ${ROUTER_FIX}`,
      },
      {
        file: "traffic-routing-experiment-step/rollout-smi-experiment-step.yaml",
        path: "spec.strategy.canary.steps[1].experiment.templates[0].weight",
        names:
          'experiment template "experiment-smi": experiment template weight needs a Service per template',
      },
    ],
  },
  "workload-ref/workload-ref.yaml": {
    plans: {
      strategy: "canary",
      replicas: 5,
      trafficRouting: false,
      steps: [
        ["setWeight: 20", 20, 1, 4],
        ["pause: 10s", 20, 1, 4],
      ],
    },
  },
};

/** The files planned with an example: itself, then every file used by it. */
const filesOf = (example: string): string[] => [
  example,
  ...Object.entries(EXAMPLES)
    .filter(([, o]) => "usedBy" in o && o.usedBy.includes(example))
    .map(([f]) => f),
];

/** `file: document N (Kind name): path (step k): message` as its parts. */
function problemsIn(err: string): Array<{ file: string; path: string; message: string }> {
  return err
    .split("\n")
    .filter((l) => l.startsWith(`${DIR}/`))
    .map((line) => {
      const m = /^(.+?): document \d+ \([^)]*\): (\S+?)(?: \(step \d+\))?: (.*)$/.exec(line);
      if (!m) throw new Error(`not a located problem: ${line}`);
      return { file: (m[1] as string).slice(DIR.length + 1), path: m[2] as string, message: m[3] as string };
    });
}

const entries = Object.entries(EXAMPLES);
const planned = entries.filter((e): e is [string, Plans] => "plans" in e[1]);
const refused = entries.filter((e): e is [string, Refused] => "refused" in e[1]);

describe("Argo Rollouts' example manifests through rollouts plan", () => {
  it("the table has one outcome for every YAML file copied from examples/, and pairs only with examples", () => {
    const files = readdirSync(DIR, { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".yaml"))
      .map((f) => f.split("\\").join("/"))
      .sort();
    expect(Object.keys(EXAMPLES).sort()).toEqual(files);
    for (const [, outcome] of entries) {
      if (!("usedBy" in outcome)) continue;
      for (const user of outcome.usedBy) expect(EXAMPLES[user], user).not.toHaveProperty("usedBy");
    }
  });

  it.each(planned)("%s plans as Argo runs it", async (example, { plans }) => {
    const { code, out, err } = await run("plan", ...filesOf(example).map((f) => join(DIR, f)), "--json");
    expect(err).not.toMatch(/^error/m);
    expect(code).toBe(0);
    const plan = JSON.parse(out);
    expect({ strategy: plan.strategy, replicas: plan.replicas, trafficRouting: plan.trafficRouting }).toEqual(
      {
        strategy: plans.strategy,
        replicas: plans.replicas,
        trafficRouting: plans.trafficRouting,
      },
    );
    expect(
      plan.steps.map((s: { detail: string; weight: number; canaryPods: number; stablePods: number }) => [
        s.detail,
        s.weight,
        s.canaryPods,
        s.stablePods,
      ]),
    ).toEqual(plans.steps);
  });

  it("a canary without steps says it is promoted once ready, as Argo's rolling update", async () => {
    const { code, out } = await run("plan", join(DIR, "rollout-rolling-update.yaml"));
    expect(code).toBe(0);
    expect(out).toContain(
      "no steps: the candidate is promoted once it is ready (Argo's rolling update: a canary without steps)",
    );
    const stepped = await run("plan", join(DIR, "rollout-canary.yaml"));
    expect(stepped.out).not.toContain("no steps");
  });

  it.each(refused)("%s is refused, naming what is not supported", async (example, { refused: expected }) => {
    const { code, out, err } = await run("plan", ...filesOf(example).map((f) => join(DIR, f)));
    expect(code).toBe(2);
    expect(out).toBe("");
    const problems = problemsIn(err);
    expect(problems.map(({ file, path }) => ({ file, path }))).toEqual(
      expected.map(({ file, path }) => ({ file, path })),
    );
    for (const [i, { names }] of expected.entries()) expect(problems[i]?.message).toContain(names);
  });

  it("a file with no Rollout is used by the examples it is planned with; one used by none plans nothing alone", async () => {
    for (const [file, outcome] of entries) {
      if ("usedBy" in outcome) {
        // Alone it is no rollout; with its examples it is read, not refused for itself.
        const alone = await run("plan", join(DIR, file));
        expect(alone.code, file).toBe(2);
        expect(alone.err, file).toContain(`${DIR}/${file}: no rollout found`);
      } else if ("alone" in outcome) {
        const alone = await run("plan", join(DIR, file));
        expect(alone.code, file).toBe(2);
        expect(alone.err, file).toContain(`${DIR}/${file}: ${outcome.alone}`);
        expect(entries.some(([, o]) => "usedBy" in o && o.usedBy.includes(file))).toBe(false);
      }
    }
    // Read beside the Rollout: the ConfigMap defines the on-purple trigger the Rollout subscribes
    // to (no warning with it), and the Kustomization is skipped with a note.
    const notified = await run(
      "plan",
      ...filesOf("notifications/rollout-canary.yaml").map((f) => join(DIR, f)),
    );
    expect(notified.err).not.toContain("warning:");
    expect(notified.err).toContain(
      `note: ${DIR}/notifications/kustomization.yaml: document 1: skipped Kustomization (not a rollout object)`,
    );
  });

  it("README.md gives the count the table gives", () => {
    const readme = readFileSync("README.md", "utf8");
    const rollouts = planned.length + refused.length;
    expect(readme).toContain(
      `**${planned.length} of the ${rollouts} examples plan as Argo runs them** (of the ${entries.length} YAML manifests under Argo Rollouts' \`examples/\`, the other ${entries.length - rollouts} are the templates, Services, routes and ConfigMaps they load)`,
    );
    expect(readme).toContain(
      `${refused.length} are refused, each naming the router or feature sfn-rollouts does not support`,
    );
  });
});
