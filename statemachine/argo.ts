import {
  type AnalysisRef,
  type ArgContext,
  type LoadedTemplate,
  type Origin,
  resolveAnalysis,
  zodProblems,
} from "./analysis-resolve.ts";
import { type ArgoExperiment, normalizeExperiment } from "./argo-experiment.ts";
import { argoSafety } from "./argo-safety.ts";
import {
  type ArgoAnalysisRef,
  type ArgoRolloutSpec,
  ArgoRolloutSpecSchema,
  ArgoStepSchemas,
  ISTIO_SUBSET_SPLIT,
  type KubeObject,
  REJECTED_ROUTER_FIX,
  REJECTED_ROUTERS,
  REJECTED_STEPS,
} from "./argo-schema.ts";
import { ARGO_DEFAULTS } from "./defaults.ts";
import { parseDuration } from "./duration.ts";
import { ERROR_BUDGET_ANNOTATION, parseErrorBudget } from "./error-budget.ts";
import { rolloutNameProblem } from "./names.ts";
import { subscriptionsFromAnnotations } from "./notifications.ts";
import { type CanaryScale, resolveMaxSurge } from "./pods.ts";
import type { Problem } from "./problems.ts";
import { revisionOf } from "./revision.ts";
import type { AnalysisSpec, RolloutSpec, Step } from "./spec.ts";

export const toRef = (a: ArgoAnalysisRef): AnalysisRef => ({
  templates: a.templates,
  args: a.args ?? [],
  dryRun: a.dryRun ?? [],
  measurementRetention: a.measurementRetention ?? [],
});

/** The first container image of a pod template, when it has one. */
function imageOf(template: Record<string, unknown> | undefined): string | undefined {
  const containers = (template?.spec as { containers?: Array<{ image?: unknown }> } | undefined)?.containers;
  const image = Array.isArray(containers) ? containers[0]?.image : undefined;
  return typeof image === "string" ? image : undefined;
}

/**
 * Normalizes an Argo `Rollout` into a RolloutSpec. Blue/green is compiled into the same step list
 * as a canary (preview, pre-promotion analysis, pause, switch to 100, post-promotion analysis), so
 * one workflow shape runs both strategies.
 */
export function normalizeArgoRollout(
  object: KubeObject,
  origin: Origin,
  templates: ReadonlyMap<string, LoadedTemplate>,
  problems: Problem[],
): RolloutSpec | undefined {
  const before = problems.length;
  const name = object.metadata?.name;
  if (!name) problems.push({ ...origin, path: "metadata.name", message: "a Rollout needs a name" });
  const nameProblem = name ? rolloutNameProblem(name) : undefined;
  if (nameProblem) problems.push({ ...origin, path: "metadata.name", message: nameProblem });
  const parsed = ArgoRolloutSpecSchema.safeParse(object.spec ?? {});
  if (!parsed.success) {
    problems.push(...zodProblems(parsed.error, origin, "spec"));
    return undefined;
  }
  const spec = parsed.data;
  if (!spec.template && !spec.workloadRef) {
    problems.push({
      ...origin,
      path: "spec.template",
      message: "a Rollout needs a pod template (spec.template)",
    });
  }
  const revision = revisionOf(spec.template ?? spec.workloadRef ?? {});
  const replicas = spec.replicas ?? ARGO_DEFAULTS.replicas;
  const ctx: StrategyContext = { origin, templates, context: { revision, object }, problems };
  const { common, steps, backgroundAnalysis } = spec.strategy.canary
    ? canaryStrategy(spec.strategy.canary, replicas, ctx)
    : spec.strategy.blueGreen
      ? blueGreenStrategy(spec.strategy.blueGreen, ctx)
      : { common: {}, steps: [] };
  const notifications = subscriptionsFromAnnotations(object.metadata?.annotations, origin, problems);
  const safety = argoSafety(object, origin, problems);
  const budgetText = object.metadata?.annotations?.[ERROR_BUDGET_ANNOTATION];
  let errorBudget: number | undefined;
  if (budgetText !== undefined) {
    const parsedBudget = parseErrorBudget(budgetText);
    if ("error" in parsedBudget) {
      problems.push({
        ...origin,
        path: `metadata.annotations["${ERROR_BUDGET_ANNOTATION}"]`,
        message: parsedBudget.error,
      });
    } else errorBudget = parsedBudget.budget;
  }
  if (problems.length !== before || !name) return undefined;
  const image = imageOf(spec.template);
  return {
    name,
    revision,
    source: "argo",
    strategy: spec.strategy.canary ? "canary" : "blueGreen",
    replicas,
    maxSurge: common.maxSurge ?? 1,
    trafficRouting: common.trafficRouting ?? false,
    scaleDownDelaySeconds: common.scaleDownDelaySeconds ?? ARGO_DEFAULTS.scaleDownDelaySeconds,
    abortScaleDownDelaySeconds: common.abortScaleDownDelaySeconds ?? ARGO_DEFAULTS.abortScaleDownDelaySeconds,
    onFailure: "rollback",
    ...common,
    steps,
    ...(backgroundAnalysis ? { backgroundAnalysis } : {}),
    ...(image ? { image } : {}),
    ...(notifications.length > 0 ? { notifications } : {}),
    ...safety,
    ...(errorBudget !== undefined ? { errorBudget } : {}),
  };
}

type ArgoStrategy = ArgoRolloutSpec["strategy"];

/** What both strategies need: where the Rollout is, its templates, its arguments, the problems. */
interface StrategyContext {
  readonly origin: Origin;
  readonly templates: ReadonlyMap<string, LoadedTemplate>;
  readonly context: ArgContext;
  readonly problems: Problem[];
}

/** What a strategy gives the spec: its settings, its steps, and a background analysis. */
interface StrategyParts {
  common: Partial<RolloutSpec>;
  steps: Step[];
  backgroundAnalysis?: RolloutSpec["backgroundAnalysis"];
}

/** A canary: its surge, services and delays, its steps, and its background analysis. */
function canaryStrategy(
  canary: NonNullable<ArgoStrategy["canary"]>,
  replicas: number,
  { origin, templates, context, problems }: StrategyContext,
): StrategyParts {
  const steps: Step[] = [];
  let backgroundAnalysis: RolloutSpec["backgroundAnalysis"];
  const common: Partial<RolloutSpec> = {};
  const maxSurge = resolveMaxSurge(canary.maxSurge, replicas);
  if (maxSurge === undefined) {
    problems.push({
      ...origin,
      path: "spec.strategy.canary.maxSurge",
      message: `maxSurge must be a whole number or a percent like "25%", got ${typeof canary.maxSurge === "number" ? canary.maxSurge : JSON.stringify(canary.maxSurge)}`,
    });
  }
  common.maxSurge = maxSurge ?? 1;
  common.trafficRouting = canary.trafficRouting !== undefined;
  if (canary.trafficRouting) routerProblems(canary.trafficRouting, origin, problems);
  if (canary.canaryService) common.canaryService = canary.canaryService;
  if (canary.stableService) common.stableService = canary.stableService;
  if (canary.scaleDownDelaySeconds !== undefined) common.scaleDownDelaySeconds = canary.scaleDownDelaySeconds;
  if (canary.abortScaleDownDelaySeconds !== undefined) {
    common.abortScaleDownDelaySeconds = canary.abortScaleDownDelaySeconds;
  }
  const rawSteps = inPercents(canary.steps ?? [], canary.trafficRouting, origin, problems);
  rawSteps.forEach((raw, i) => {
    if (raw === REFUSED_WEIGHT) return;
    const step = normalizeStep(
      raw,
      i,
      rawSteps.length,
      origin,
      "spec.strategy.canary.steps",
      templates,
      context,
      problems,
    );
    if (step) steps.push(step);
    if (step?.kind === "setCanaryScale" && canary.trafficRouting === undefined) {
      problems.push({
        ...origin,
        path: `spec.strategy.canary.steps[${i}].setCanaryScale`,
        step: i + 1,
        message: `step ${i + 1} of ${rawSteps.length}: setCanaryScale requires trafficRouting: without a router the canary's pods are its share of the traffic (Argo: SetCanaryScale requires TrafficRouting to be set)`,
      });
    }
  });
  if (canary.analysis) {
    const path = "spec.strategy.canary.analysis";
    const startingStep = canary.analysis.startingStep ?? ARGO_DEFAULTS.startingStep;
    if (startingStep > rawSteps.length) {
      problems.push({
        ...origin,
        path: `${path}.startingStep`,
        message: `startingStep ${startingStep} is past the last step (there are ${rawSteps.length})`,
      });
    }
    const analysis = resolveAnalysis(
      toRef(canary.analysis),
      templates,
      { ...origin, path },
      context,
      problems,
    );
    if (analysis) backgroundAnalysis = { startingStep, analysis };
  }
  return { common, steps, ...(backgroundAnalysis ? { backgroundAnalysis } : {}) };
}

/**
 * The steps with each `setWeight` counted in percents. With a router, Argo counts weights in units
 * of `trafficRouting.maxTrafficWeight` (100 unless set): `setWeight: 100` of 1000 sends 10% and
 * scales 10% of the pods. Targets here take whole percents, so a weight that is not a whole
 * percent of the total is refused at its step, as is one outside 0..maxTrafficWeight (Argo's check).
 */
function inPercents(
  steps: readonly unknown[],
  routing: Record<string, unknown> | undefined,
  origin: Origin,
  problems: Problem[],
): unknown[] {
  const total = routing?.maxTrafficWeight ?? ARGO_DEFAULTS.maxTrafficWeight;
  if (typeof total !== "number" || !Number.isInteger(total) || total < 1) {
    problems.push({
      ...origin,
      path: "spec.strategy.canary.trafficRouting.maxTrafficWeight",
      message: `maxTrafficWeight must be a whole number of at least 1, got ${JSON.stringify(total)}`,
    });
    return [...steps];
  }
  if (total === ARGO_DEFAULTS.maxTrafficWeight) return [...steps];
  return steps.map((raw, i) => {
    const weight =
      raw !== null && typeof raw === "object" ? (raw as { setWeight?: unknown }).setWeight : undefined;
    if (typeof weight !== "number" || !Number.isInteger(weight)) return raw;
    const at = { ...origin, path: `spec.strategy.canary.steps[${i}].setWeight`, step: i + 1 };
    const percent = (weight * 100) / total;
    if (weight < 0 || weight > total) {
      problems.push({ ...at, message: `SetWeight needs to be between 0 and ${total} (maxTrafficWeight)` });
    } else if (!Number.isInteger(percent)) {
      problems.push({
        ...at,
        message: `setWeight ${weight} of maxTrafficWeight ${total} is ${percent}% of the traffic: targets take whole percents, so use a multiple of ${total / gcd(total, 100)}`,
      });
    } else return { ...(raw as object), setWeight: percent };
    return REFUSED_WEIGHT;
  });
}

/** A step whose weight `inPercents` refused: its problem is said, the step is not read again. */
const REFUSED_WEIGHT = Symbol("refused weight");

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/**
 * The routers of `trafficRouting` that no target drives (a service mesh or an ingress of its own),
 * each refused at its field with its name, and Istio's subset-level split, which the istio router
 * does not do.
 */
function routerProblems(routing: Record<string, unknown>, origin: Origin, problems: Problem[]): void {
  const path = "spec.strategy.canary.trafficRouting";
  for (const key of Object.keys(routing)) {
    const router = Object.hasOwn(REJECTED_ROUTERS, key) ? REJECTED_ROUTERS[key] : undefined;
    if (router) {
      problems.push({
        ...origin,
        path: `${path}.${key}`,
        message: `${router} is not a traffic router sfn-rollouts drives: ${REJECTED_ROUTER_FIX}`,
      });
    }
  }
  const istio = routing.istio;
  if (istio !== null && typeof istio === "object" && Object.hasOwn(istio, "destinationRule")) {
    problems.push({ ...origin, path: `${path}.istio.destinationRule`, message: ISTIO_SUBSET_SPLIT });
  }
}

/**
 * Blue/green as a canary: preview, pre-promotion analysis, a pause (or auto-promotion after a
 * delay), the switch to 100, post-promotion analysis.
 */
function blueGreenStrategy(
  bg: NonNullable<ArgoStrategy["blueGreen"]>,
  { origin, templates, context, problems }: StrategyContext,
): StrategyParts {
  const path = "spec.strategy.blueGreen";
  const steps: Step[] = [];
  const common: Partial<RolloutSpec> = {};
  common.trafficRouting = true;
  common.activeService = bg.activeService;
  if (bg.previewService) common.previewService = bg.previewService;
  if (bg.previewReplicaCount !== undefined) common.previewReplicaCount = bg.previewReplicaCount;
  if (bg.scaleDownDelaySeconds !== undefined) common.scaleDownDelaySeconds = bg.scaleDownDelaySeconds;
  if (bg.abortScaleDownDelaySeconds !== undefined)
    common.abortScaleDownDelaySeconds = bg.abortScaleDownDelaySeconds;
  steps.push({ kind: "preview" });
  const analysisStep = (
    ref: ArgoAnalysisRef,
    kind: "prePromotionAnalysis" | "postPromotionAnalysis",
  ): Step | undefined => {
    const analysis: AnalysisSpec | undefined = resolveAnalysis(
      toRef(ref),
      templates,
      { ...origin, path: `${path}.${kind}` },
      context,
      problems,
    );
    return analysis ? { kind: "analysis", origin: kind, analysis } : undefined;
  };
  if (bg.prePromotionAnalysis) {
    const s = analysisStep(bg.prePromotionAnalysis, "prePromotionAnalysis");
    if (s) steps.push(s);
  }
  if (bg.autoPromotionEnabled === false) steps.push({ kind: "pause", reason: "BlueGreenPause" });
  else if (bg.autoPromotionSeconds) {
    steps.push({ kind: "pause", duration: bg.autoPromotionSeconds, reason: "BlueGreenPause" });
  }
  steps.push({ kind: "setWeight", weight: 100 });
  if (bg.postPromotionAnalysis) {
    const s = analysisStep(bg.postPromotionAnalysis, "postPromotionAnalysis");
    if (s) steps.push(s);
  }
  return { common, steps };
}

/**
 * One step in Argo's shape (`{setWeight: 25}`, `{pause: {duration: 30s}}`, `{analysis: {...}}`),
 * shared by Argo Rollouts and the native spec's explicit step list.
 */
export function normalizeStep(
  raw: unknown,
  index: number,
  count: number,
  origin: Origin,
  basePath: string,
  templates: ReadonlyMap<string, LoadedTemplate>,
  context: ArgContext,
  problems: Problem[],
): Step | undefined {
  const path = `${basePath}[${index}]`;
  const step = index + 1;
  const at = { ...origin, path, step };
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    problems.push({
      ...at,
      message: `a step must be an object like {setWeight: 25}, got ${JSON.stringify(raw)}`,
    });
    return undefined;
  }
  const keys = Object.keys(raw);
  // A step Argo accepts may pair setCanaryScale with a route (Argo's one-of holds setWeight,
  // pause, experiment and analysis only): what is not supported is named before the count.
  const rejectedKey = keys.length > 1 ? keys.find((k) => Object.hasOwn(REJECTED_STEPS, k)) : undefined;
  if (rejectedKey !== undefined) {
    problems.push({
      ...at,
      path: `${path}.${rejectedKey}`,
      message: `step ${step} of ${count}: ${REJECTED_STEPS[rejectedKey]}`,
    });
    return undefined;
  }
  if (keys.length !== 1) {
    problems.push({
      ...at,
      message:
        keys.length === 0
          ? "an empty step: use one of setWeight, pause, analysis, experiment, setHeaderRoute, setMirrorRoute, setCanaryScale"
          : `a step has exactly one action, this one has ${keys.map((k) => `"${k}"`).join(", ")}: write each as a step of its own`,
    });
    return undefined;
  }
  const key = keys[0] as string;
  const value = (raw as Record<string, unknown>)[key];
  const rejected = Object.hasOwn(REJECTED_STEPS, key) ? REJECTED_STEPS[key] : undefined;
  if (rejected) {
    problems.push({ ...at, path: `${path}.${key}`, message: `step ${step} of ${count}: ${rejected}` });
    return undefined;
  }
  if (!Object.hasOwn(ArgoStepSchemas, key)) {
    problems.push({
      ...at,
      path: `${path}.${key}`,
      message: `unknown step "${key}": use one of setWeight, pause, analysis, experiment, setHeaderRoute, setMirrorRoute, setCanaryScale`,
    });
    return undefined;
  }
  const schema = ArgoStepSchemas[key as keyof typeof ArgoStepSchemas];
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    problems.push(...zodProblems(parsed.error, origin, `${path}.${key}`, step));
    return undefined;
  }
  switch (key) {
    case "setWeight":
      return { kind: "setWeight", weight: parsed.data as number };
    case "pause": {
      const duration = (parsed.data as { duration?: number | string }).duration;
      if (duration === undefined) return { kind: "pause", reason: "CanaryPauseStep" };
      const d = parseDuration(duration);
      if ("error" in d) {
        problems.push({ ...at, path: `${path}.pause.duration`, message: d.error });
        return undefined;
      }
      return { kind: "pause", duration: d.seconds, reason: "CanaryPauseStep" };
    }
    case "analysis": {
      const analysis = resolveAnalysis(
        toRef(parsed.data as ArgoAnalysisRef),
        templates,
        { ...origin, path: `${path}.analysis`, step },
        context,
        problems,
      );
      return analysis ? { kind: "analysis", origin: "step", analysis } : undefined;
    }
    case "setHeaderRoute": {
      const h = parsed.data as { name: string; match?: Extract<Step, { kind: "setHeaderRoute" }>["match"] };
      return { kind: "setHeaderRoute", name: h.name, ...(h.match ? { match: h.match } : {}) };
    }
    case "experiment":
      return normalizeExperiment(parsed.data as ArgoExperiment, at, count, templates, context, problems);
    case "setCanaryScale":
      return canaryScaleStep(parsed.data as CanaryScale);
    default: {
      const m = parsed.data as { name: string; percentage?: number; match?: Array<Record<string, unknown>> };
      return {
        kind: "setMirrorRoute",
        name: m.name,
        ...(m.percentage !== undefined ? { percentage: m.percentage } : {}),
        ...(m.match ? { match: m.match } : {}),
      };
    }
  }
}

/** Argo's setCanaryScale, its fields as given. */
function canaryScaleStep(c: CanaryScale): Step {
  return {
    kind: "setCanaryScale",
    ...(c.replicas !== undefined ? { replicas: c.replicas } : {}),
    ...(c.weight !== undefined ? { weight: c.weight } : {}),
    ...(c.matchTrafficWeight !== undefined ? { matchTrafficWeight: c.matchTrafficWeight } : {}),
  };
}
