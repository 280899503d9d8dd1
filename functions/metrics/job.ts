import { createHash } from "node:crypto";
import type { Metric } from "../../statemachine/spec.ts";
import {
  type KubeClient,
  KubeConflictError,
  type KubeObject,
  RESOURCES,
} from "../traffic/kubernetes/client.ts";
import {
  type MeasureContext,
  type MetricProvider,
  type ProviderAnswer,
  type ProviderResult,
  type RunningMeasurement,
  UnsupportedProviderError,
} from "./port.ts";

/**
 * The Job provider, as Argo's `metricproviders/job` runs one: a measurement is a batch/v1 Job in
 * the rollout's namespace, built from the metric's `provider.job` (`metadata` labels and
 * annotations, `spec` as written), and its outcome is the Job's:
 *
 * - **Run** creates the Job `<run uid>.<metric name>.<n>`, `n` the metric's measurements so far
 *   plus one (Argo's `count + error + 1`), labelled `analysisrun.argoproj.io/uid: <run uid>` and
 *   annotated with `analysisrun.argoproj.io/name` and `analysisrun.argoproj.io/metric-name`. The
 *   measurement is Running with `job-name` in its metadata. A Job of that name already there is
 *   taken when it carries the run's uid label (a retried call), else the create's error is the
 *   measurement's Error;
 * - **Resume** reads the Job: a `Complete` condition makes the measurement Successful, a `Failed`
 *   one Failed (the last such condition decides, as in Argo), anything else keeps it Running. A
 *   Job that is gone is an Error: `job.batch "<name>" not found`;
 * - **Terminate** deletes the Job (its pods first) and ends the measurement Successful;
 * - **GarbageCollect** keeps the run's newest `limit` Jobs and deletes the older ones.
 *
 * Unlike Argo, the Job has no ownerReference: no AnalysisRun object lives in the cluster, and
 * Kubernetes' garbage collector deletes a dependent whose owner does not exist. The uid label
 * stands in for it (the collision check and GarbageCollect read it). A Job measurement has no
 * value, as in Argo.
 */
export class JobMetricProvider {
  constructor(private readonly client: KubeClient) {}

  /** Argo's Run: creates the measurement's Job. */
  async run(run: JobRunRef, metric: JobMetricSpec, index: number): Promise<ProviderAnswer> {
    const job = metricJob(run, metric, index);
    const name = job.metadata.name;
    try {
      await this.client.create(RESOURCES.jobs, job);
    } catch (error) {
      if (!(error instanceof KubeConflictError)) return { ok: false, message: messageOf(error) };
      // A Job of that name exists: ours when it carries this run's uid (a create retried).
      let existing: KubeObject | undefined;
      try {
        existing = await this.client.get(RESOURCES.jobs, run.namespace, name);
      } catch {
        return { ok: false, message: messageOf(error) };
      }
      if (existing?.metadata.labels?.[RUN_UID_LABEL] !== run.uid)
        return { ok: false, message: messageOf(error) };
    }
    return { ok: "running", metadata: { [JOB_NAME_KEY]: name }, resumeAfterSeconds: JOB_RESUME_SECONDS };
  }

  /** Argo's Resume: the Job's conditions decide; Running again while it has neither. */
  async resume(run: JobRunRef, metadata: Readonly<Record<string, string>>): Promise<ProviderAnswer> {
    const name = metadata[JOB_NAME_KEY];
    if (!name) return { ok: false, message: MISSING_REFERENCE };
    let job: KubeObject | undefined;
    try {
      job = await this.client.get(RESOURCES.jobs, run.namespace, name);
    } catch (error) {
      return { ok: false, message: messageOf(error), metadata: { ...metadata } };
    }
    if (!job) return { ok: false, message: `job.batch "${name}" not found`, metadata: { ...metadata } };
    let phase: "Successful" | "Failed" | undefined;
    for (const condition of jobConditions(job)) {
      if (condition.type === "Complete") phase = "Successful";
      else if (condition.type === "Failed") phase = "Failed";
    }
    if (!phase) return { ok: "running", metadata: { ...metadata }, resumeAfterSeconds: JOB_RESUME_SECONDS };
    return { ok: true, result: undefined, value: "", phase, metadata: { ...metadata } };
  }

  /** Argo's Terminate: deletes the Job (gone already is fine); the measurement ends Successful. */
  async terminate(run: JobRunRef, metadata: Readonly<Record<string, string>>): Promise<ProviderResult> {
    const name = metadata[JOB_NAME_KEY];
    if (!name) return { ok: false, message: MISSING_REFERENCE };
    try {
      await this.client.delete(RESOURCES.jobs, run.namespace, name);
    } catch (error) {
      return { ok: false, message: messageOf(error), metadata: { ...metadata } };
    }
    return { ok: true, result: undefined, value: "", phase: "Successful", metadata: { ...metadata } };
  }

  /**
   * Argo's GarbageCollect: the run's Jobs (by its uid label), oldest first by creation, all but
   * the newest `limit` deleted. Resolves to the first error's message, or undefined.
   */
  async garbageCollect(run: JobRunRef, limit: number): Promise<string | undefined> {
    try {
      const jobs = await this.client.list(RESOURCES.jobs, run.namespace, `${RUN_UID_LABEL}=${run.uid}`);
      // A stable sort: Jobs created in the same second stay in the order the API listed them.
      const oldestFirst = [...jobs].sort((a, b) => created(a) - created(b));
      for (const job of oldestFirst.slice(0, Math.max(0, oldestFirst.length - limit))) {
        await this.client.delete(RESOURCES.jobs, run.namespace, job.metadata.name);
      }
      return undefined;
    } catch (error) {
      return messageOf(error);
    }
  }
}

/** The run a Job measures for: its uid and name (in the Job's label and annotation), its namespace. */
export interface JobRunRef {
  readonly uid: string;
  readonly name: string;
  /** The rollout's namespace, where the Job is created. */
  readonly namespace: string;
}

/** Argo's `JobMetric`: the Job's labels and annotations, and its spec as written. */
export interface JobMetricSpec {
  readonly name: string;
  readonly metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  readonly spec: Record<string, unknown>;
}

/** The measurement's metadata key of its Job's name (Argo's `JobNameKey`). */
export const JOB_NAME_KEY = "job-name";
/** The Job's label with its run's uid (Argo's `AnalysisRunUIDLabelKey`). */
export const RUN_UID_LABEL = "analysisrun.argoproj.io/uid";
/** The Job's annotation with its run's name (Argo's `AnalysisRunNameAnnotationKey`). */
export const RUN_NAME_ANNOTATION = "analysisrun.argoproj.io/name";
/** The Job's annotation with its metric's name (Argo's `AnalysisRunMetricAnnotationKey`). */
export const METRIC_NAME_ANNOTATION = "analysisrun.argoproj.io/metric-name";
/**
 * How long after a start or a read of a Job still running it is read again. Argo reads it on
 * the Job's own change (an informer); a run here asks at its next tick.
 */
export const JOB_RESUME_SECONDS = 10;

const MISSING_REFERENCE = "job metadata reference missing";

/**
 * Argo's `newMetricJob`: the Job of a metric's `index`-th measurement (from 1), the run's uid
 * label and name annotations over the metric's own.
 */
export function metricJob(run: JobRunRef, metric: JobMetricSpec, index: number): KubeObject {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: `${run.uid}.${metric.name}.${index}`,
      namespace: run.namespace,
      labels: { ...(metric.metadata?.labels ?? {}), [RUN_UID_LABEL]: run.uid },
      annotations: {
        ...(metric.metadata?.annotations ?? {}),
        [RUN_NAME_ANNOTATION]: run.name,
        [METRIC_NAME_ANNOTATION]: metric.name,
      },
    },
    spec: structuredClone(metric.spec),
  };
}

function jobConditions(job: KubeObject): Array<{ type?: unknown }> {
  const conditions = job.status?.conditions;
  return Array.isArray(conditions) ? (conditions as Array<{ type?: unknown }>) : [];
}

function created(job: KubeObject): number {
  const at = Date.parse(String(job.metadata.creationTimestamp ?? ""));
  return Number.isNaN(at) ? 0 : at;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The cluster a target's settings reach: a client, and the namespace Jobs are created in. */
export interface JobCluster {
  readonly client: KubeClient;
  readonly namespace: string;
}

/**
 * The `job` provider as the analysis calls it: each measurement of a `provider.job` metric is a
 * {@link JobMetricProvider} call in the cluster of the rollout's kubernetes target (`clusterFor`
 * its settings), for the run the context names (its uid from {@link runUid}).
 */
export class JobMetrics implements MetricProvider {
  constructor(private readonly clusterFor: (target: unknown) => JobCluster) {}

  async measure(metric: Metric, ctx: MeasureContext): Promise<ProviderAnswer> {
    const { provider, run, job } = this.#bind(metric, ctx);
    return provider.run(run, job, ctx.run?.measurement ?? 1);
  }

  async resume(metric: Metric, running: RunningMeasurement, ctx: MeasureContext): Promise<ProviderAnswer> {
    const { provider, run } = this.#bind(metric, ctx);
    return provider.resume(run, running.metadata);
  }

  /** Argo's Terminate of a running measurement: its Job deleted. */
  async terminate(metric: Metric, running: RunningMeasurement, ctx: MeasureContext): Promise<ProviderResult> {
    const { provider, run } = this.#bind(metric, ctx);
    return provider.terminate(run, running.metadata);
  }

  #bind(metric: Metric, ctx: MeasureContext) {
    const job = metric.provider.job;
    if (!job) throw new UnsupportedProviderError(`metric "${metric.name}": not a job metric`);
    if (!ctx.run)
      throw new UnsupportedProviderError(`metric "${metric.name}": a Job needs the run it measures for`);
    const type = (ctx.target as { type?: unknown } | undefined)?.type;
    if (type !== "kubernetes") {
      throw new UnsupportedProviderError(
        `metric "${metric.name}": a Job runs in the cluster of the kubernetes target only (this rollout's target is ${type === undefined ? "not given" : String(type)})`,
      );
    }
    const cluster = this.clusterFor(ctx.target);
    const run: JobRunRef = { uid: runUid(ctx.run.id), name: ctx.run.id, namespace: cluster.namespace };
    const spec: JobMetricSpec = {
      name: metric.name,
      spec: job.spec,
      ...(job.metadata ? { metadata: job.metadata } : {}),
    };
    return { provider: new JobMetricProvider(cluster.client), run, job: spec };
  }
}

/**
 * The uid a run's Jobs are labelled with (Argo labels them with its AnalysisRun's uid): a UUID's
 * shape, from the SHA-256 of the run id, so every tick of a run derives the same one.
 */
export function runUid(runId: string): string {
  const h = createHash("sha256").update(runId).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
