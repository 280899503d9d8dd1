/**
 * Argo Rollouts' defaults, in one place: what a field means when a Rollout or an AnalysisTemplate
 * leaves it out (Argo's `defaults` package and its CRD documentation). The schemas, the Argo and
 * native normalizers and the adapters read them from here, so a default cannot differ between
 * two input forms.
 *
 * `interval` and `count` have no number as default: without `interval` a metric measures once;
 * without `count` a metric with an interval runs until its analysis is terminated (background
 * analysis), and one without measures once.
 */
export const ARGO_DEFAULTS = {
  /** `spec.replicas`. */
  replicas: 1,
  /** `canary.trafficRouting.maxTrafficWeight`: what a `setWeight` counts in (100: percents). */
  maxTrafficWeight: 100,
  /** `canary.maxSurge`: a percent of the replicas, rounded up. */
  maxSurge: "25%",
  /** `canary.maxUnavailable`: accepted in a Rollout; the plan's pod rounding follows maxSurge only. */
  maxUnavailable: "25%",
  /** Seconds the old stable side keeps running after a promotion (`scaleDownDelaySeconds`). */
  scaleDownDelaySeconds: 30,
  /** Seconds the canary keeps running after an abort (`abortScaleDownDelaySeconds`). */
  abortScaleDownDelaySeconds: 30,
  /** Seconds a new revision may take to become ready (`progressDeadlineSeconds`). */
  progressDeadlineSeconds: 600,
  /** `canary.analysis.startingStep`: background analysis from the first step. */
  startingStep: 0,
  /** A metric's limits and settings. */
  metric: {
    initialDelaySeconds: 0,
    failureLimit: 0,
    inconclusiveLimit: 0,
    consecutiveErrorLimit: 4,
    /** 0: disabled, the metric succeeds unless it fails. */
    consecutiveSuccessLimit: 0,
    /** Measurements kept per metric (Argo's `DefaultMeasurementHistoryLimit`). */
    measurementRetention: 10,
  },
  /** Providers' timeouts and windows, in seconds. */
  provider: {
    prometheusTimeoutSeconds: 30,
    webTimeoutSeconds: 10,
    /** CloudWatch's `interval`: the history read, 5 minutes. */
    cloudWatchIntervalSeconds: 300,
    /** Datadog's API version when a template names none: the CRD's default, `v1`. */
    datadogApiVersion: "v1",
    /** Datadog's `interval`: the history read, 5 minutes. */
    datadogIntervalSeconds: 300,
    /** Datadog's `requestTimeout`: the HTTP client's timeout, 10 seconds. */
    datadogRequestTimeoutSeconds: 10,
    /** New Relic's `timeout`: NRQL's own timeout, 5 seconds. */
    newRelicTimeoutSeconds: 5,
  },
} as const;

/** The native spec's own defaults, where it differs from Argo's. */
export const NATIVE_DEFAULTS = {
  /** The native reference keeps the old side for half an hour after a promotion. */
  scaleDownDelaySeconds: 1800,
  abortScaleDownDelaySeconds: ARGO_DEFAULTS.abortScaleDownDelaySeconds,
} as const;
