import {
  type AnalysisSpec,
  type Metric,
  type MetricInput,
  MetricSchema,
  type RolloutSpec,
  type RolloutSpecInput,
  RolloutSpecSchema,
  type Step,
} from "../../statemachine/spec.ts";

/** A web metric (never queried: tests give their own provider), 2 measurements 3 s apart after 5 s. */
export function metric(overrides: Partial<MetricInput> = {}): Metric {
  return MetricSchema.parse({
    name: "success-rate",
    interval: 3,
    initialDelay: 5,
    count: 2,
    successCondition: "result[0] >= 0.95",
    provider: { web: { url: "http://127.0.0.1:1/unused" } },
    ...overrides,
  });
}

/** One template of these metrics (default: `metric()`), no args. */
export function analysisSpec(...metrics: Metric[]): AnalysisSpec {
  return {
    templates: [
      { name: "success-rate", kind: "AnalysisTemplate", metrics: metrics.length ? metrics : [metric()] },
    ],
    args: {},
  };
}

/** The reference canary, shortened: 25% → analysis → 50% → pause 2 s → analysis. */
export const CANARY_STEPS: Step[] = [
  { kind: "setWeight", weight: 25 },
  { kind: "analysis", origin: "step", analysis: analysisSpec() },
  { kind: "setWeight", weight: 50 },
  { kind: "pause", duration: 2, reason: "CanaryPauseStep" },
  { kind: "analysis", origin: "step", analysis: analysisSpec() },
];

/** A native canary rollout named `checkout` with these steps (and any other field given). */
export function canarySpec(
  steps: Step[] = CANARY_STEPS,
  overrides: Partial<RolloutSpecInput> = {},
): RolloutSpec {
  return RolloutSpecSchema.parse({
    name: "checkout",
    revision: "74a0fb7474",
    source: "native",
    strategy: "canary",
    trafficRouting: true,
    steps,
    ...overrides,
  });
}

/**
 * An Argo Rollout (`shop`, behind an ALB) whose one analysis step runs `templateName` with the
 * pushed tag as `args.version`: 25% → the analysis → 100%. The provider scenarios decide it.
 */
export function argoAnalysisRollout(templateName: string): string {
  return `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: shop}
spec:
  template: {spec: {containers: [{name: app, image: "shop:2"}]}}
  strategy:
    canary:
      trafficRouting: {alb: {ingress: shop}}
      steps:
        - setWeight: 25
        - analysis:
            templates: [{templateName: ${templateName}}]
            args: [{name: version, valueFrom: {podTemplateHashValue: Latest}}]
        - setWeight: 100
`;
}
