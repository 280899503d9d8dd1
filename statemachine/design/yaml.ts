import { stringify } from "yaml";
import { formatDuration } from "../duration.ts";
import type { Candidate } from "./candidates.ts";
import type { MetricNames, Router } from "./input.ts";
import type { Thresholds } from "./thresholds.ts";

/**
 * A design as Argo Rollouts objects: the Rollout (a weight, then the analysis, for each weight of
 * the candidate) and the AnalysisTemplate its analyses run, with PromQL built from the metric
 * names. The candidate is selected by `{{args.version}}`, bound in the Rollout to the new
 * version's value (`valueFrom.podTemplateHashValue: Latest`: the pushed image's tag), so the query
 * never mixes the stable version's requests into the candidate's.
 */

/** How Argo routes the weights for each router (the construct's target does it on AWS). */
function trafficRouting(router: Router, name: string): Record<string, unknown> | undefined {
  switch (router) {
    case "alb":
      return { alb: { ingress: name, servicePort: 80 } };
    case "gateway":
      return { plugins: { "argoproj-labs/gatewayAPI": { httpRoute: name, namespace: "default" } } };
    case "istio":
      return { istio: { virtualService: { name, routes: ["primary"] } } };
    case "nginx":
      return { nginx: { stableIngress: name } };
    case "lambda":
      // No Argo router moves a Lambda alias: the construct's lambda-alias target does, with exact
      // weights, which is all this entry says to the loader.
      return { plugins: { "sfn-rollouts/lambda-alias": { alias: "live" } } };
    case "none":
      return undefined;
  }
}

export interface RolloutShape {
  name: string;
  replicas: number;
  router: Router;
  weights: readonly number[];
  templateName: string;
}

/** The Rollout object. */
export function rolloutObject(shape: RolloutShape): Record<string, unknown> {
  const { name } = shape;
  const routing = trafficRouting(shape.router, name);
  const analysis = {
    analysis: {
      templates: [{ templateName: shape.templateName }],
      args: [{ name: "version", valueFrom: { podTemplateHashValue: "Latest" } }],
    },
  };
  return {
    apiVersion: "argoproj.io/v1alpha1",
    kind: "Rollout",
    metadata: { name },
    spec: {
      replicas: shape.replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "app", image: name }] },
      },
      strategy: {
        canary: {
          ...(routing
            ? { trafficRouting: routing, canaryService: `${name}-canary`, stableService: `${name}-stable` }
            : {}),
          steps: shape.weights.flatMap((w) => [{ setWeight: w }, structuredClone(analysis)]),
        },
      },
    },
  };
}

/** The failed share of the version's requests over the window; 0, not an empty vector, when none failed. */
export function errorQuery(m: MetricNames, windowSeconds: number): string {
  const version = `${m.version}="{{args.version}}"`;
  const w = `[${windowSeconds}s]`;
  return [
    "(",
    `  sum(rate(${m.requests}{${version},${m.errors}}${w}))`,
    "  /",
    `  sum(rate(${m.requests}{${version}}${w}))`,
    ") or vector(0)",
  ].join("\n");
}

/** The version's 95th percentile over the window, seconds, from its histogram's buckets. */
export function latencyQuery(m: MetricNames, windowSeconds: number): string {
  return `histogram_quantile(0.95, sum by (le) (rate(${m.latency}_bucket{${m.version}="{{args.version}}"}[${windowSeconds}s])))`;
}

export interface TemplateShape {
  name: string;
  metrics: MetricNames;
  thresholds: Pick<Thresholds, "errorRate" | "p95Seconds">;
  look: Pick<Candidate, "intervalSeconds" | "count" | "failureLimit">;
}

/**
 * The AnalysisTemplate: the error ratio and the p95, each looked at every interval over the
 * interval's requests (the first look after one interval at the step's weight, so its window holds
 * only traffic the step sent).
 */
export function templateObject(shape: TemplateShape): Record<string, unknown> {
  const { look, metrics, thresholds } = shape;
  const timing = {
    initialDelay: formatDuration(look.intervalSeconds),
    interval: formatDuration(look.intervalSeconds),
    count: look.count,
    failureLimit: look.failureLimit,
  };
  const provider = (query: string) => ({ prometheus: { address: "{{args.prometheus}}", query } });
  return {
    apiVersion: "argoproj.io/v1alpha1",
    kind: "AnalysisTemplate",
    metadata: { name: shape.name },
    spec: {
      args: [{ name: "version" }, { name: "prometheus", value: metrics.prometheus }],
      metrics: [
        {
          name: "error-ratio",
          ...timing,
          successCondition: `result[0] <= ${thresholds.errorRate}`,
          provider: provider(errorQuery(metrics, look.intervalSeconds)),
        },
        {
          name: "p95-latency",
          ...timing,
          successCondition: `result[0] <= ${Number(thresholds.p95Seconds.toPrecision(6))}`,
          provider: provider(latencyQuery(metrics, look.intervalSeconds)),
        },
      ],
    },
  };
}

/** Documents as one YAML stream, each after its comment lines (`# ...`). */
export function yamlDocuments(docs: ReadonlyArray<{ comment?: readonly string[]; value: unknown }>): string {
  return docs
    .map(({ comment, value }) => {
      const head = (comment ?? []).map((line) => (line === "" ? "#" : `# ${line}`)).join("\n");
      const body = stringify(value, { lineWidth: 0 });
      return head ? `${head}\n${body}` : body;
    })
    .join("---\n");
}
