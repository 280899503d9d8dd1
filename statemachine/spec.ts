import { z } from "zod";
import { ARGO_DEFAULTS } from "./defaults.ts";
import { JudgeSpecSchema } from "./judge-spec.ts";
import { LIMIT_MESSAGES, MAX_MEASUREMENT_RETENTION, MAX_REPLICAS, MAX_WAIT_SECONDS } from "./limits.ts";
import { rolloutNameProblem } from "./names.ts";
import { NotificationCatalogSchema } from "./notification-catalog.ts";
import { NotificationSubscriptionSchema } from "./notifications.ts";
import { AlarmsSchema, HooksSchema } from "./safety.ts";
import { WavesSpecSchema } from "./waves.ts";

const Wait = () => z.number().nonnegative().max(MAX_WAIT_SECONDS, LIMIT_MESSAGES.wait);
const Replicas = () => z.number().int().nonnegative().max(MAX_REPLICAS, LIMIT_MESSAGES.replicas);

import { exactlyOneProvider, ReadingProviderFields } from "./providers.ts";

export * from "./judge-spec.ts";
export * from "./providers.ts";
export * from "./safety.ts";
export * from "./waves.ts";

/** A metric's provider: one that reads a system, or a judge that reads two versions through one. */
export const MetricProviderSchema = z
  .object({ ...ReadingProviderFields, judge: JudgeSpecSchema.optional() })
  .strict()
  .refine(exactlyOneProvider, {
    message:
      "a metric needs exactly one provider (prometheus, web, cloudWatch, samples, datadog, newRelic, graphite, influxdb, wavefront, kayenta, job or a judge)",
  });

/**
 * The normalized rollout spec: the only input of the compiler, the plan, the construct and the
 * handlers. Both input forms (Argo Rollouts objects and the native spec) are parsed into it, so
 * nothing downstream knows which form a user wrote. Durations are seconds, weights are percent,
 * analysis templates are embedded with their arguments already substituted.
 */

/** One metric of an analysis, with Argo's defaults applied. */
export const MetricSchema = z
  .object({
    name: z.string().min(1),
    /** Seconds between measurements; absent = one measurement (or none between, with count 1). */
    interval: z.number().positive().max(MAX_WAIT_SECONDS, LIMIT_MESSAGES.wait).optional(),
    /** Seconds before the first measurement. */
    initialDelay: Wait().default(ARGO_DEFAULTS.metric.initialDelaySeconds),
    /** Absent with an interval = run until the analysis is terminated (background analysis). */
    count: z.number().int().nonnegative().optional(),
    failureLimit: z.number().int().min(-1).default(ARGO_DEFAULTS.metric.failureLimit),
    inconclusiveLimit: z.number().int().nonnegative().default(ARGO_DEFAULTS.metric.inconclusiveLimit),
    consecutiveErrorLimit: z.number().int().nonnegative().default(ARGO_DEFAULTS.metric.consecutiveErrorLimit),
    consecutiveSuccessLimit: z
      .number()
      .int()
      .nonnegative()
      .default(ARGO_DEFAULTS.metric.consecutiveSuccessLimit),
    successCondition: z.string().optional(),
    failureCondition: z.string().optional(),
    dryRun: z.boolean().default(false),
    measurementRetention: z
      .number()
      .int()
      .positive()
      .max(MAX_MEASUREMENT_RETENTION, LIMIT_MESSAGES.retention)
      .default(ARGO_DEFAULTS.metric.measurementRetention),
    provider: MetricProviderSchema,
  })
  .strict();

/** An AnalysisTemplate after argument substitution: what an analysis step runs. */
export const AnalysisTemplateSpecSchema = z
  .object({
    name: z.string().min(1),
    /** `AnalysisTemplate` or `ClusterAnalysisTemplate`; `inline` for the native spec. */
    kind: z.enum(["AnalysisTemplate", "ClusterAnalysisTemplate", "inline"]),
    metrics: z.array(MetricSchema).min(1),
  })
  .strict();

export const AnalysisSpecSchema = z
  .object({
    templates: z.array(AnalysisTemplateSpecSchema).min(1),
    /** Arguments after resolution; `{{args.NAME}}` is already substituted in the metrics. */
    args: z.record(z.string(), z.string()).default({}),
  })
  .strict();

const HeaderMatchSchema = z
  .object({
    headerName: z.string().min(1),
    headerValue: z
      .object({
        exact: z.string().optional(),
        prefix: z.string().optional(),
        regex: z.string().optional(),
      })
      .strict(),
  })
  .strict();

/** One rollout step. Every kind becomes one state (or a small group of states) in the workflow. */
export const StepSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("setWeight"), weight: z.number().int().min(0).max(100) }).strict(),
  z
    .object({
      kind: z.literal("pause"),
      /** Seconds; absent = wait for a person (`rollouts promote`). */
      duration: Wait().optional(),
      reason: z.enum(["CanaryPauseStep", "BlueGreenPause", "Approval"]).default("CanaryPauseStep"),
    })
    .strict(),
  z
    .object({
      kind: z.literal("analysis"),
      /** Where the analysis comes from: `step`, `prePromotionAnalysis`, `postPromotionAnalysis`. */
      origin: z.enum(["step", "prePromotionAnalysis", "postPromotionAnalysis"]).default("step"),
      analysis: AnalysisSpecSchema,
    })
    .strict(),
  z
    .object({
      kind: z.literal("setMirrorRoute"),
      name: z.string().min(1),
      /** Percent of matching requests mirrored to the candidate; absent with no match = remove. */
      percentage: z.number().int().min(0).max(100).optional(),
      match: z.array(z.record(z.string(), z.unknown())).optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal("setHeaderRoute"),
      name: z.string().min(1),
      /** Absent = remove the route. */
      match: z.array(HeaderMatchSchema).optional(),
    })
    .strict(),
  z.object({ kind: z.literal("preview") }).strict(),
  z
    .object({
      kind: z.literal("experiment"),
      /** Seconds the experiment's ReplicaSets run once available; absent = until `rollouts promote`. */
      duration: Wait().optional(),
      /** One ReplicaSet each, from the stable or the candidate's pod template. */
      templates: z
        .array(
          z
            .object({
              name: z
                .string()
                .max(63)
                .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "a DNS label: lower-case letters, digits and '-'"),
              specRef: z.enum(["stable", "canary"]),
              /** Pods of the ReplicaSet (Argo's default: 1). */
              replicas: z.number().int().nonnegative().optional(),
            })
            .strict(),
        )
        .min(1),
      /** The experiment's analyses, run once its ReplicaSets are available; the step ends when they do. */
      analysis: AnalysisSpecSchema.optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal("setCanaryScale"),
      /** The canary's pods, whatever the weight. */
      replicas: z.number().int().nonnegative().optional(),
      /** The canary's pods as a percent of the rollout's replicas, rounded up (may exceed 100). */
      weight: z.number().int().nonnegative().optional(),
      /** Back to pods that follow the traffic weight (read before `replicas` and `weight`, as Argo does). */
      matchTrafficWeight: z.boolean().optional(),
    })
    .strict(),
]);

export const BackgroundAnalysisSchema = z
  .object({
    /** Step index (from 0) at which the background analysis starts. */
    startingStep: z.number().int().nonnegative().default(ARGO_DEFAULTS.startingStep),
    analysis: AnalysisSpecSchema,
  })
  .strict();

export const RolloutSpecSchema = z
  .object({
    name: z.string().refine((name) => rolloutNameProblem(name) === undefined, {
      error: (issue) => rolloutNameProblem(String(issue.input)) ?? "not a rollout name",
    }),
    /** First ten hex digits of the SHA-256 of the pod template (or native spec version) canonical JSON. */
    revision: z.string().regex(/^[0-9a-f]{10}$/),
    source: z.enum(["argo", "native"]),
    strategy: z.enum(["canary", "blueGreen"]),
    replicas: Replicas().default(ARGO_DEFAULTS.replicas),
    /** Surge pods allowed for basic (pod-count) canaries, already resolved from a number or percent. */
    maxSurge: z.number().int().nonnegative().default(1),
    /** True when an exact traffic router splits requests (trafficRouting, or any AWS target). */
    trafficRouting: z.boolean().default(false),
    canaryService: z.string().optional(),
    stableService: z.string().optional(),
    activeService: z.string().optional(),
    previewService: z.string().optional(),
    previewReplicaCount: Replicas().optional(),
    scaleDownDelaySeconds: Wait().int().default(ARGO_DEFAULTS.scaleDownDelaySeconds),
    abortScaleDownDelaySeconds: Wait().int().default(ARGO_DEFAULTS.abortScaleDownDelaySeconds),
    /** Testers' header route, `name: value` (native `testers.header`). */
    testers: z
      .object({ header: z.string().min(1), value: z.string() })
      .strict()
      .optional(),
    onFailure: z.enum(["rollback", "stop"]).default("rollback"),
    /** Weights changed by someone else: pause for a person (absent: `pause`), or `ignore` and overwrite them. */
    onDrift: z.enum(["pause", "ignore"]).optional(),
    /**
     * A canary gate's rollback cooldown, applied by the trigger: a push of an image that was rolled
     * back less than `seconds` ago is refused, and `maxPerHour` rollbacks of it within an hour
     * refuse it until that hour has passed.
     */
    rollbackCooldown: z
      .object({ seconds: Wait().int(), maxPerHour: z.number().int().positive() })
      .strict()
      .optional(),
    steps: z.array(StepSchema),
    backgroundAnalysis: BackgroundAnalysisSchema.optional(),
    /** The container image named by the pod template, when there is one. */
    image: z.string().optional(),
    /** Who is told when a trigger fires (Argo's `notifications.argoproj.io/subscribe.*` annotations). */
    notifications: z.array(NotificationSubscriptionSchema).optional(),
    /** The custom triggers and templates of an `argo-rollouts-notification-configmap` among the spec files. */
    notificationCatalog: NotificationCatalogSchema.optional(),
    /** Shipped one region or account at a time (`statemachine/waves.ts`). */
    waves: WavesSpecSchema.optional(),
    /** The pass of a release in waves this rollout runs (`eu`): its stages are named after it (`eu/25%`). */
    pass: z.string().min(1).optional(),
    /** CloudWatch alarms (names or ARNs): one going to ALARM while a step runs aborts the rollout. */
    alarms: AlarmsSchema.optional(),
    /** A missing alarm or a failed DescribeAlarms lets the step go on instead of aborting. */
    ignorePollAlarmFailure: z.boolean().optional(),
    /**
     * The rollout's false-rollback budget: the chance that an identical release is rolled back by
     * any of its statistical gates (default 0.05), shared between them (`error-budget.ts`).
     */
    errorBudget: z.number().gt(0).lt(1).optional(),
    /** Lambda functions the workflow asks for a verdict before and after traffic moves. */
    hooks: HooksSchema.optional(),
  })
  .strict();

export type Metric = z.infer<typeof MetricSchema>;
export type MetricProviderSpec = z.infer<typeof MetricProviderSchema>;
export type AnalysisTemplateSpec = z.infer<typeof AnalysisTemplateSpecSchema>;
export type AnalysisSpec = z.infer<typeof AnalysisSpecSchema>;
export type Step = z.infer<typeof StepSchema>;
export type StepKind = Step["kind"];
export type BackgroundAnalysis = z.infer<typeof BackgroundAnalysisSchema>;
export type RolloutSpec = z.infer<typeof RolloutSpecSchema>;
/** The same types before defaults are applied: what a library user may write by hand. */
export type RolloutSpecInput = z.input<typeof RolloutSpecSchema>;
export type MetricInput = z.input<typeof MetricSchema>;

/** The analysis a step runs: an analysis step's, or an experiment's analyses; none for the others. */
export function stepAnalysis(step: Step): AnalysisSpec | undefined {
  if (step.kind === "analysis") return step.analysis;
  if (step.kind === "experiment") return step.analysis;
  return undefined;
}
