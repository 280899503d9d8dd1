import { z } from "zod";
import {
  type ArgContext,
  type LoadedTemplate,
  loadTemplate,
  type Origin,
  resolveAnalysis,
  zodProblems,
} from "./analysis-resolve.ts";
import { normalizeStep } from "./argo.ts";
import { ArgoArgumentSchema, IntOrString } from "./argo-schema.ts";
import { ARGO_DEFAULTS, NATIVE_DEFAULTS } from "./defaults.ts";
import { parseDuration } from "./duration.ts";
import { LIMIT_MESSAGES, MAX_MEASUREMENT_RETENTION, MAX_REPLICAS } from "./limits.ts";
import { rolloutNameProblem } from "./names.ts";
import { healthTemplate } from "./native-health.ts";
import { NotificationSubscriptionSchema } from "./notifications.ts";
import type { Problem } from "./problems.ts";
import { revisionOf } from "./revision.ts";
import { AlarmsSchema, HookSchema } from "./safety.ts";
import type { AnalysisSpec, RolloutSpec, Step } from "./spec.ts";
import { normalizeWaves, type WavesSpec } from "./waves.ts";

/**
 * The native spec, for teams not on Kubernetes: percentages with a bake after each, testers
 * routed by header, approvals between steps and an analysis (a health gate) with its templates
 * inline. It compiles to the same step list as an Argo Rollout.
 */
const Duration = IntOrString;

/** A hook as an ARN alone, or with its timeout and heartbeat. */
const NativeHook = () =>
  z.preprocess((v) => (typeof v === "string" ? { function: v } : v), HookSchema).optional();

export const NativeAnalysisSchema = z
  .object({
    templates: z
      .array(
        z
          .object({
            name: z.string().min(1),
            args: z.array(ArgoArgumentSchema).optional(),
            metrics: z.array(z.unknown()).min(1),
            dryRun: z.array(z.object({ metricName: z.string() }).strict()).optional(),
            measurementRetention: z
              .array(
                z
                  .object({
                    metricName: z.string(),
                    limit: z
                      .number()
                      .int()
                      .positive()
                      .max(MAX_MEASUREMENT_RETENTION, LIMIT_MESSAGES.retention),
                  })
                  .strict(),
              )
              .optional(),
          })
          .strict(),
      )
      .min(1),
    args: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
  })
  .strict();

export const NativeSpecSchema = z
  .object({
    apiVersion: z.literal("sfn-rollouts/v1").optional(),
    kind: z.literal("Rollout").optional(),
    name: z.string().min(1),
    strategy: z.enum(["canary", "blueGreen"]).default("canary"),
    /** What identifies the version (image, environment, ...): hashed into the revision. */
    template: z.record(z.string(), z.unknown()).optional(),
    image: z.string().optional(),
    replicas: z.number().int().nonnegative().max(MAX_REPLICAS, LIMIT_MESSAGES.replicas).optional(),
    steps: z.array(z.unknown()).min(1).max(40).optional(),
    bake: Duration.optional(),
    testers: z
      .object({ header: z.string().regex(/^[^:\s]+:\s*\S.*$/, 'a header like "x-canary: always"') })
      .strict()
      .optional(),
    approvalsBetween: z.array(z.union([z.string(), z.number()])).optional(),
    /** `rollback-wave` and `rollback-all` say what a failed target of a release in waves does to the others. */
    onFailure: z.enum(["rollback", "stop", "rollback-wave", "rollback-all"]).default("rollback"),
    /** Weights changed by someone else: `pause` for a person (paused-drift), or `ignore` and overwrite them. */
    onDrift: z.enum(["pause", "ignore"]).default("pause"),
    scaleDownDelay: Duration.optional(),
    abortScaleDownDelay: Duration.optional(),
    analysis: NativeAnalysisSchema.optional(),
    /** The gates read during each step's bake (`compare: stable` metrics, a score, judges). */
    health: z.unknown().optional(),
    /** The chance an identical release is rolled back by any statistical gate (default 0.05). */
    errorBudget: z
      .number({ message: "errorBudget is a probability, like 0.05" })
      .gt(0, "errorBudget must be above 0")
      .lt(1, "errorBudget must be below 1")
      .optional(),
    /** Who is told when a trigger fires: `[{trigger: on-rollout-aborted, service: slack, recipients: ["#deploys"]}]`. */
    notifications: z.array(NotificationSubscriptionSchema).optional(),
    /** One region or account at a time: `[{name, targets | select, bake}]` (`statemachine/waves.ts`). */
    waves: z.unknown().optional(),
    /** CloudWatch alarms (names or ARNs) that abort the rollout when one goes to ALARM. */
    alarms: AlarmsSchema.optional(),
    ignorePollAlarmFailure: z.boolean().optional(),
    /** Lambda functions asked for a verdict: an ARN, or `{function, timeoutSeconds, heartbeatSeconds}`. */
    hooks: z
      .object({ beforeTraffic: NativeHook(), afterTraffic: NativeHook(), afterPromotion: NativeHook() })
      .strict()
      .optional(),
  })
  .strict();

export type NativeSpec = z.infer<typeof NativeSpecSchema>;

/** True for a document written in the native form rather than as a Kubernetes object. */
export function isNativeDocument(doc: unknown): boolean {
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) return false;
  const d = doc as Record<string, unknown>;
  if (d.apiVersion === "sfn-rollouts/v1") return true;
  return d.apiVersion === undefined && d.kind === undefined && typeof d.name === "string";
}

const seconds = (
  value: string | number | undefined,
  fallback: number,
  origin: Origin,
  path: string,
  problems: Problem[],
): number => {
  if (value === undefined) return fallback;
  const d = parseDuration(value);
  if ("error" in d) {
    problems.push({ ...origin, path, message: d.error });
    return fallback;
  }
  return d.seconds;
};

/**
 * Normalizes a native document into a RolloutSpec; every problem is collected. `paths` renames
 * top-level fields in problems (the native reference's layout nests them under `rollout:`).
 */
export function normalizeNative(
  doc: unknown,
  origin: Origin,
  problems: Problem[],
  paths: Readonly<Record<string, string>> = {},
): RolloutSpec | undefined {
  const mine: Problem[] = [];
  const spec = normalize(doc, origin, mine);
  for (const problem of mine) {
    const head = problem.path?.split(/[.[]/)[0] ?? "";
    const renamed = paths[head];
    problems.push(
      renamed !== undefined && problem.path !== undefined
        ? { ...problem, path: `${renamed}${problem.path.slice(head.length)}` }
        : problem,
    );
  }
  return mine.length > 0 ? undefined : spec;
}

function normalize(doc: unknown, origin: Origin, problems: Problem[]): RolloutSpec | undefined {
  const before = problems.length;
  const parsed = NativeSpecSchema.safeParse(doc);
  if (!parsed.success) {
    problems.push(...zodProblems(parsed.error, origin, ""));
    return undefined;
  }
  const o: Origin = { ...origin, object: origin.object ?? `Rollout ${parsed.data.name}` };
  const n = withoutWaveApprovals(parsed.data);
  const waves = nativeWaves(parsed.data, o, problems);
  const nameProblem = rolloutNameProblem(n.name);
  if (nameProblem) problems.push({ ...o, path: "name", message: nameProblem });
  const templates = inlineTemplates(n, o, problems);
  const revision = revisionOf(n.template ?? (n.image ? { image: n.image } : n));
  const bake = seconds(n.bake, 0, o, "bake", problems);
  const ctx: NativeContext = { n, o, templates, context: { revision, object: doc }, problems, bake };
  const testers = testersOf(n);
  const steps = nativeSteps(ctx, testers);
  if (problems.length !== before) return undefined;
  return {
    name: n.name,
    revision,
    source: "native",
    strategy: n.strategy,
    replicas: n.replicas ?? ARGO_DEFAULTS.replicas,
    maxSurge: 1,
    trafficRouting: true,
    scaleDownDelaySeconds: seconds(
      n.scaleDownDelay,
      NATIVE_DEFAULTS.scaleDownDelaySeconds,
      o,
      "scaleDownDelay",
      problems,
    ),
    abortScaleDownDelaySeconds: seconds(
      n.abortScaleDownDelay,
      NATIVE_DEFAULTS.abortScaleDownDelaySeconds,
      o,
      "abortScaleDownDelay",
      problems,
    ),
    ...(testers ? { testers } : {}),
    onFailure: n.onFailure === "stop" ? "stop" : "rollback",
    ...(n.onDrift === "ignore" ? { onDrift: "ignore" as const } : {}),
    steps,
    ...(n.image ? { image: n.image } : {}),
    ...(n.notifications && n.notifications.length > 0 ? { notifications: n.notifications } : {}),
    ...(waves ? { waves } : {}),
    ...(n.alarms ? { alarms: n.alarms } : {}),
    ...(n.ignorePollAlarmFailure !== undefined ? { ignorePollAlarmFailure: n.ignorePollAlarmFailure } : {}),
    ...(n.errorBudget !== undefined ? { errorBudget: n.errorBudget } : {}),
    ...(n.hooks && Object.values(n.hooks).some((h) => h !== undefined)
      ? { hooks: definedHooks(n.hooks) }
      : {}),
  };
}

/** The document without the waves' names in approvalsBetween: those pause between waves, not steps. */
function withoutWaveApprovals(data: NativeSpec): NativeSpec {
  const waveNames = waveNamesOf(data.waves);
  return {
    ...data,
    ...(data.approvalsBetween
      ? { approvalsBetween: data.approvalsBetween.filter((a) => !waveNames.has(String(a))) }
      : {}),
  };
}

/**
 * The document's waves, with the approvals between them; without waves, onFailure cannot roll
 * back a wave or all of them.
 */
function nativeWaves(data: NativeSpec, o: Origin, problems: Problem[]): WavesSpec | undefined {
  if (data.waves === undefined) {
    if (data.onFailure === "rollback-wave" || data.onFailure === "rollback-all") {
      problems.push({
        ...o,
        path: "onFailure",
        message: `${data.onFailure} applies to a release in waves: without waves give rollback (or stop)`,
      });
    }
    return undefined;
  }
  return normalizeWaves(data.waves, {
    approvals: (data.approvalsBetween ?? []).map(String),
    onFailure: data.onFailure,
    origin: o,
    path: "waves",
    problems,
  });
}

/**
 * The rollout's steps: the testers' header route first when there are testers, a blue-green
 * preview, then the steps as written (percentages, or steps of their own), or the default ones.
 */
function nativeSteps(ctx: NativeContext, testers: RolloutSpec["testers"]): Step[] {
  const n = ctx.n;
  const steps: Step[] = [];
  if (testers) {
    steps.push({
      kind: "setHeaderRoute",
      name: "testers",
      match: [{ headerName: testers.header, headerValue: { exact: testers.value } }],
    });
  }
  if (n.strategy === "blueGreen") steps.push({ kind: "preview" });
  const rawSteps = n.steps ?? (n.strategy === "blueGreen" ? [100] : [5, 25, 50, 100]);
  if (rawSteps.every((s) => typeof s === "number")) steps.push(...percentageSteps(rawSteps as number[], ctx));
  else steps.push(...explicitSteps(rawSteps, ctx));
  return steps;
}

/** The names of the waves as written, to tell a wave in approvalsBetween from a step. */
function waveNamesOf(raw: unknown): Set<string> {
  if (!Array.isArray(raw)) return new Set();
  return new Set(
    raw.flatMap((w) =>
      w !== null && typeof w === "object" && typeof (w as { name?: unknown }).name === "string"
        ? [(w as { name: string }).name]
        : [],
    ),
  );
}

/** The hooks given, without the keys left out (the spec is strict about `undefined`). */
function definedHooks(hooks: NonNullable<NativeSpec["hooks"]>): NonNullable<RolloutSpec["hooks"]> {
  return Object.fromEntries(Object.entries(hooks).filter(([, h]) => h !== undefined));
}

/** One native document being normalized: the parsed spec, where it is, its inline templates. */
interface NativeContext {
  readonly n: NativeSpec;
  readonly o: Origin;
  readonly templates: ReadonlyMap<string, LoadedTemplate>;
  readonly context: ArgContext;
  readonly problems: Problem[];
  /** Seconds of the bake after each percentage step. */
  readonly bake: number;
}

/** The `analysis.templates`, loaded as inline AnalysisTemplates. */
function inlineTemplates(n: NativeSpec, o: Origin, problems: Problem[]): Map<string, LoadedTemplate> {
  const templates = new Map<string, LoadedTemplate>();
  n.analysis?.templates.forEach((t, i) => {
    const { name: _name, ...templateSpec } = t;
    const loaded = loadTemplate(t.name, "inline", templateSpec, o, `analysis.templates[${i}]`, problems);
    if (loaded) templates.set(`inline/${t.name}`, loaded);
  });
  return templates;
}

/** `testers.header` (`name: value`) as the header the testers' route matches. */
function testersOf(n: NativeSpec): RolloutSpec["testers"] {
  if (!n.testers) return undefined;
  const sep = n.testers.header.indexOf(":");
  return { header: n.testers.header.slice(0, sep).trim(), value: n.testers.header.slice(sep + 1).trim() };
}

/** The `analysis` block: every inline template, with the block's arguments. */
function gateAnalysis({ n, o, templates, context, problems }: NativeContext): AnalysisSpec | undefined {
  if (!n.analysis) return undefined;
  const args = Object.entries(n.analysis.args ?? {}).map(([name, value]) => ({ name, value: String(value) }));
  return resolveAnalysis(
    {
      templates: n.analysis.templates.map((t) => ({ templateName: t.name })),
      args,
      dryRun: [],
      measurementRetention: [],
    },
    templates,
    { ...o, path: "analysis" },
    context,
    problems,
  );
}

/** The `health` block, as the inline template "health". */
function healthAnalysis({
  n,
  o,
  templates,
  context,
  problems,
  bake,
}: NativeContext): AnalysisSpec | undefined {
  if (n.health === undefined) return undefined;
  const template = healthTemplate(n.health, {
    origin: o,
    path: "health",
    application: n.name,
    bake,
    problems,
  });
  if (!template) return undefined;
  if (templates.has("inline/health")) {
    problems.push({
      ...o,
      path: "analysis.templates",
      message: 'the template name "health" is taken by the health block',
    });
    return undefined;
  }
  const loaded = loadTemplate("health", "inline", template, o, "health", problems);
  if (!loaded) return undefined;
  return resolveAnalysis(
    { templates: [{ templateName: "health" }], args: [], dryRun: [], measurementRetention: [] },
    new Map([["inline/health", loaded]]),
    { ...o, path: "health" },
    context,
    problems,
  );
}

/**
 * Percentage steps (`[5, 25, 50, 100]`): each percentage, then the health gate through the bake
 * (or the bake as a pause), the analysis, and an approval where `approvalsBetween` asks for one.
 */
function percentageSteps(weights: number[], ctx: NativeContext): Step[] {
  const { n, o, problems, bake } = ctx;
  const steps: Step[] = [];
  const approvals = new Set((n.approvalsBetween ?? []).map(String));
  weights.forEach((w, i) => {
    const path = `steps[${i}]`;
    if (!Number.isInteger(w) || w < 1 || w > 100) {
      problems.push({
        ...o,
        path,
        step: i + 1,
        message: `a percentage must be a whole number from 1 to 100, got ${w}`,
      });
    } else if (i > 0 && w <= (weights[i - 1] ?? 0)) {
      problems.push({
        ...o,
        path,
        step: i + 1,
        message: `percentages must increase: ${w} after ${weights[i - 1]}`,
      });
    }
  });
  if (weights.at(-1) !== 100) {
    problems.push({
      ...o,
      path: `steps[${weights.length - 1}]`,
      message: "the last percentage must be 100",
    });
  }
  if (n.strategy === "blueGreen" && weights.length !== 1) {
    problems.push({
      ...o,
      path: "steps",
      message: "a blueGreen rollout switches at once: steps must be [100]",
    });
  }
  const analysis = gateAnalysis(ctx);
  const gates = healthAnalysis(ctx);
  if (approvals.has("0")) steps.push({ kind: "pause", reason: "Approval" });
  weights.forEach((w, i) => {
    steps.push({ kind: "setWeight", weight: w });
    if (i === weights.length - 1) return;
    // The health gate reads through the bake; without one the bake is a plain pause.
    if (gates) steps.push({ kind: "analysis", origin: "step", analysis: gates });
    else if (bake > 0) steps.push({ kind: "pause", duration: bake, reason: "CanaryPauseStep" });
    if (analysis) steps.push({ kind: "analysis", origin: "step", analysis });
    if (approvals.has(String(w))) steps.push({ kind: "pause", reason: "Approval" });
  });
  for (const a of approvals) {
    if (a !== "0" && !weights.slice(0, -1).map(String).includes(a)) {
      problems.push({
        ...o,
        path: "approvalsBetween",
        message: `"${a}" is not "0" nor the percentage of a step before the last (${weights.slice(0, -1).join(", ")})`,
      });
    }
  }
  return steps;
}

/** An explicit step list, in Argo's step shapes; the percentage-only fields do not apply. */
function explicitSteps(
  rawSteps: readonly unknown[],
  { n, o, templates, context, problems }: NativeContext,
): Step[] {
  if ((n.approvalsBetween ?? []).length > 0 || n.bake !== undefined || n.health !== undefined) {
    problems.push({
      ...o,
      path: n.bake !== undefined ? "bake" : n.health !== undefined ? "health" : "approvalsBetween",
      message:
        "bake, health and approvalsBetween apply to percentage steps; with an explicit step list use pause and analysis steps",
    });
  }
  const steps: Step[] = [];
  rawSteps.forEach((raw, i) => {
    const step = normalizeStep(raw, i, rawSteps.length, o, "steps", templates, context, problems);
    if (step) steps.push(step);
  });
  return steps;
}
