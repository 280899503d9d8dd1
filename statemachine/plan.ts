import { formatDuration } from "./duration.ts";
import { describeBudget } from "./error-budget.ts";
import { describeJudge, judgeSamplesNeeded } from "./judge-describe.ts";
import { type CanaryScale, canaryCounts, canaryScaleAt, effectiveScale, scaledCanaryCounts } from "./pods.ts";
import { describeGuards } from "./safety.ts";
import { type AnalysisSpec, type Metric, type RolloutSpec, type Step, stepAnalysis } from "./spec.ts";
import { describeWaves } from "./waves.ts";

/** One row of a plan: what a step does, the pods it needs and the traffic the candidate gets. */
export interface PlanStep {
  /** From 0, as Argo counts. */
  index: number;
  kind: Step["kind"];
  /** The candidate's weight once the step is done. */
  weight: number;
  canaryPods: number;
  stablePods: number;
  /** The share of requests (with a router) or connections (pods behind one Service) the candidate gets. */
  share: number;
  /** Pause seconds; absent for an indefinite pause. */
  duration?: number;
  detail: string;
  analysis?: string[];
  /** With `--rps`: the requests per second the candidate receives at this step. */
  candidateRps?: number;
  /** Something a reviewer should know about this step (pod rounding that misses the weight badly, a step too short for its judge). */
  warning?: string;
  /** The judges of an analysis step: how many samples each needs and, with `--rps`, how long that takes. */
  gates?: PlanGate[];
}

/** A judge of an analysis step, with the arithmetic of its samples. */
export interface PlanGate {
  metric: string;
  test: string;
  /** Requests the judge needs before it may promote. */
  samplesNeeded?: number;
  /** Whether the stable version must serve `samplesNeeded` too. */
  perSide?: boolean;
  /** Seconds from the start of the analysis to its last look; absent when it runs until stopped. */
  lastLookSeconds?: number;
  /** With `--rps`: seconds until both versions have served `samplesNeeded` at this step's share. */
  secondsToSamples?: number;
  /** A sequential test's `samples`: it promotes when both versions have served them in this analysis. */
  promoteAtSamples?: number;
  /** With `--rps`: seconds until then. */
  secondsToPromote?: number;
}

export interface Plan {
  name: string;
  revision: string;
  strategy: RolloutSpec["strategy"];
  replicas: number;
  trafficRouting: boolean;
  steps: PlanStep[];
  backgroundAnalysis?: { startingStep: number; analysis: string[] };
  /** A release in waves: each wave's targets run every step above, one after the other. */
  waves?: { onFailure: string; waves: string[] };
  /** The rollout's alarms and lifecycle hooks, one line each. */
  guards?: string[];
  /** The rollout's error budget and its gates' shares, one line each (`error-budget.ts`). */
  errorBudget?: string[];
}

/** Seconds from the start of an analysis to a metric's last look; undefined when it has no count. */
function lastLook(m: Metric): number | undefined {
  if (m.count === undefined) return m.interval === undefined ? m.initialDelay : undefined;
  return m.initialDelay + (m.interval ?? 0) * Math.max(0, m.count - 1);
}

/**
 * The judges of an analysis at a share of traffic, with what they need and how long it takes.
 * `mirrored` is the percentage of requests copied to the candidate by the mirror routes in force:
 * with no live share, the judges compare the candidate's answers to those copies with the stable
 * version's answers to the same requests, so they can decide.
 */
function planGates(
  analysis: AnalysisSpec,
  share: number,
  rps: number | undefined,
  mirrored = 0,
): { gates: PlanGate[]; warnings: string[] } {
  const gates: PlanGate[] = [];
  const warnings: string[] = [];
  for (const m of analysis.templates.flatMap((t) => t.metrics)) {
    const judge = m.provider.judge;
    if (!judge) continue;
    const needed = judgeSamplesNeeded(judge);
    const last = lastLook(m);
    const gate: PlanGate = {
      metric: m.name,
      test: judge.test,
      ...(needed !== undefined ? { samplesNeeded: needed.samples, perSide: needed.bothSides } : {}),
      ...(needed?.promoteAt !== undefined ? { promoteAtSamples: needed.promoteAt } : {}),
      ...(last !== undefined ? { lastLookSeconds: last } : {}),
    };
    const shadow = share <= 0 && mirrored > 0;
    if (share <= 0 && !shadow) {
      warnings.push(
        `gate "${m.name}": the candidate receives no traffic at this step: the judge can only hold`,
      );
    } else if (needed !== undefined && rps !== undefined && rps > 0) {
      const perSecond = shadow
        ? [rps * (mirrored / 100), ...(needed.bothSides ? [rps] : [])]
        : [rps * (share / 100), ...(needed.bothSides ? [rps * (1 - share / 100)] : [])];
      const secondsFor = (samples: number) =>
        Math.max(...perSecond.map((r) => (r > 0 ? samples / r : Number.POSITIVE_INFINITY)));
      const seconds = secondsFor(needed.samples);
      gate.secondsToSamples = Number.isFinite(seconds) ? round(seconds) : -1;
      if (needed.promoteAt !== undefined) {
        const promote = secondsFor(needed.promoteAt);
        gate.secondsToPromote = Number.isFinite(promote) ? round(promote) : -1;
      }
      if (last !== undefined && seconds > last) {
        warnings.push(
          `gate "${m.name}" needs ${needed.samples} samples${needed.bothSides ? " per side" : ""}: at ${rps} rps and ${share}% that takes ${Number.isFinite(seconds) ? formatDuration(Math.ceil(seconds)) : "forever"}, but the analysis's last look is at ${formatDuration(last)}: it would hold and end Inconclusive (lengthen the analysis or lower the samples)`,
        );
      }
    }
    gates.push(gate);
  }
  return { gates, warnings };
}

/** Describes a metric the way a reviewer reads it: `success-rate: every 3s x2 after 5s; ...`. */
export function describeMetric(m: Metric): string {
  const when: string[] = [];
  if (m.interval !== undefined) when.push(`every ${formatDuration(m.interval)}`);
  if (m.count !== undefined) when.push(`x${m.count}`);
  else if (m.interval !== undefined) when.push("until stopped");
  else when.push("once");
  if (m.initialDelay > 0) when.push(`after ${formatDuration(m.initialDelay)}`);
  const parts = [when.join(" ")];
  if (m.provider.judge) {
    parts.push(describeJudge(m.provider.judge));
    if (m.dryRun) parts.push("dry run");
    return `${m.name}: ${parts.join("; ")}`;
  }
  if (m.successCondition) parts.push(`success when ${m.successCondition}`);
  if (m.failureCondition) parts.push(`failure when ${m.failureCondition}`);
  parts.push(`failureLimit ${m.failureLimit}`);
  if (m.inconclusiveLimit > 0) parts.push(`inconclusiveLimit ${m.inconclusiveLimit}`);
  if (m.consecutiveSuccessLimit > 0) parts.push(`consecutiveSuccessLimit ${m.consecutiveSuccessLimit}`);
  if (m.dryRun) parts.push("dry run");
  return `${m.name}: ${parts.join("; ")}`;
}

export function describeAnalysis(a: AnalysisSpec): string[] {
  return a.templates.flatMap((t) => t.metrics.map(describeMetric));
}

function pods(
  spec: RolloutSpec,
  weight: number,
  scale: CanaryScale | undefined,
): { canary: number; stable: number } {
  if (spec.strategy === "blueGreen") {
    return weight === 100
      ? { canary: spec.replicas, stable: spec.replicas }
      : { canary: 0, stable: spec.replicas };
  }
  return spec.trafficRouting
    ? scaledCanaryCounts(spec.replicas, weight, scale)
    : canaryCounts(spec.replicas, weight, spec.maxSurge);
}

/**
 * The plan of a rollout, step by step: pod rounding decides the real share without a traffic
 * router, and with a request rate the plan says how many requests per second meet the candidate.
 */
export function plan(spec: RolloutSpec, options: { rps?: number } = {}): Plan {
  const state: PlanState = { weight: 0, previewPods: 0, mirrors: new Map() };
  const steps = spec.steps.map((step, index) => planStep(spec, step, index, state, options.rps));
  return {
    name: spec.name,
    revision: spec.revision,
    strategy: spec.strategy,
    replicas: spec.replicas,
    trafficRouting: spec.trafficRouting,
    steps,
    ...(spec.backgroundAnalysis
      ? {
          backgroundAnalysis: {
            startingStep: spec.backgroundAnalysis.startingStep,
            analysis: describeAnalysis(spec.backgroundAnalysis.analysis),
          },
        }
      : {}),
    ...(spec.waves ? { waves: { onFailure: spec.waves.onFailure, waves: describeWaves(spec.waves) } } : {}),
    ...(describeGuards(spec).length > 0 ? { guards: describeGuards(spec) } : {}),
    ...(describeBudget(spec).length > 0 ? { errorBudget: describeBudget(spec) } : {}),
  };
}

/** What one step leaves to the next: the candidate's weight, the preview's pods, the mirror routes. */
interface PlanState {
  weight: number;
  previewPods: number;
  /** The mirror routes in force, by name: the percentage of requests each copies. */
  mirrors: Map<string, number>;
}

/** One row of the plan: the step's pods and share once it is done, and what a reviewer should know. */
function planStep(
  spec: RolloutSpec,
  step: Step,
  index: number,
  state: PlanState,
  rps: number | undefined,
): PlanStep {
  advance(state, step, spec);
  const { weight, previewPods } = state;
  const detail = stepDetail(step, previewPods);
  const duration =
    step.kind === "pause" || (step.kind === "experiment" && !step.analysis) ? step.duration : undefined;
  const stepAnalysed = stepAnalysis(step);
  const analysis = stepAnalysed ? describeAnalysis(stepAnalysed) : undefined;
  const counts = pods(spec, weight, canaryScaleAt(spec.steps, index, spec.trafficRouting));
  const canary =
    step.kind === "preview" || (spec.strategy === "blueGreen" && weight < 100) ? previewPods : counts.canary;
  const share =
    spec.trafficRouting || spec.strategy === "blueGreen"
      ? weight
      : counts.canary + counts.stable === 0
        ? 0
        : round((100 * counts.canary) / (counts.canary + counts.stable));
  const warnings =
    !spec.trafficRouting && spec.strategy === "canary" && weight > 0 && weight < 100 && counts.canary === 0
      ? [
          `${spec.replicas} pods cannot carry ${weight}% without surge: Argo's rounding gives the candidate no pod here`,
        ]
      : [];
  if (spec.trafficRouting && spec.strategy === "canary" && weight > 0 && counts.canary === 0) {
    warnings.push(
      `setCanaryScale leaves the candidate no pod while the router sends it ${weight}% of the requests`,
    );
  }
  const mirrored = Math.min(
    100,
    [...state.mirrors.values()].reduce((a, b) => Math.max(a, b), 0),
  );
  const judged = step.kind === "analysis" ? planGates(step.analysis, share, rps, mirrored) : undefined;
  if (judged) warnings.push(...judged.warnings);
  const warning = warnings.length > 0 ? warnings.join("; ") : undefined;
  return {
    index,
    kind: step.kind,
    weight,
    canaryPods: canary,
    stablePods: counts.stable,
    share,
    ...(duration !== undefined ? { duration } : {}),
    detail,
    ...(analysis ? { analysis } : {}),
    ...(rps !== undefined ? { candidateRps: round((rps * share) / 100) } : {}),
    ...(warning ? { warning } : {}),
    ...(judged && judged.gates.length > 0 ? { gates: judged.gates } : {}),
  };
}

/** What a step changes for itself and the steps after it: weight, preview pods, a mirror route. */
function advance(state: PlanState, step: Step, spec: RolloutSpec): void {
  switch (step.kind) {
    case "setWeight":
      state.weight = step.weight;
      break;
    case "setMirrorRoute":
      if (step.match || step.percentage !== undefined) state.mirrors.set(step.name, step.percentage ?? 100);
      else state.mirrors.delete(step.name);
      break;
    case "preview":
      state.previewPods = spec.previewReplicaCount ?? spec.replicas;
      break;
  }
}

/** A step in one line, as a reviewer reads it: `setWeight: 25`, `pause: 5m`, `analysis: gates`. */
function stepDetail(step: Step, previewPods: number): string {
  switch (step.kind) {
    case "setWeight":
      return `setWeight: ${step.weight}`;
    case "pause":
      return step.reason === "Approval"
        ? "approval: wait for rollouts promote"
        : step.duration === undefined
          ? "pause: until rollouts promote"
          : `pause: ${formatDuration(step.duration)}`;
    case "analysis":
      return `${step.origin === "step" ? "analysis" : step.origin}: ${step.analysis.templates.map((t) => t.name).join(", ")}`;
    case "setHeaderRoute":
      return step.match
        ? `setHeaderRoute ${step.name}: ${step.match.map((m) => `${m.headerName}: ${Object.values(m.headerValue)[0]}`).join(", ")}`
        : `setHeaderRoute ${step.name}: remove`;
    case "setMirrorRoute":
      return step.match || step.percentage !== undefined
        ? `setMirrorRoute ${step.name}: mirror ${step.percentage ?? 100}% of matching requests`
        : `setMirrorRoute ${step.name}: remove`;
    case "preview":
      return `preview: ${previewPods} new pods, no live traffic`;
    case "setCanaryScale": {
      const scale = effectiveScale(step);
      return scale?.replicas !== undefined
        ? `setCanaryScale: ${scale.replicas} canary pods, whatever the weight`
        : scale?.weight !== undefined
          ? `setCanaryScale: canary pods for ${scale.weight}% of the replicas, whatever the weight`
          : "setCanaryScale: canary pods follow the weight";
    }
    case "experiment": {
      const sets = step.templates
        .map((t) => `${t.name} (${t.specRef}, ${t.replicas ?? 1} pod${(t.replicas ?? 1) === 1 ? "" : "s"})`)
        .join(", ");
      const until = step.analysis
        ? `until analysis: ${step.analysis.templates.map((t) => t.name).join(", ")}`
        : step.duration === undefined
          ? "until rollouts promote"
          : formatDuration(step.duration);
      return `experiment: ${sets}, ${until}`;
    }
  }
}

const round = (x: number) => Math.round(x * 100) / 100;
