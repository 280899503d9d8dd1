import type { Json } from "./patch.ts";
import { RESOURCE_TYPES } from "./resources.ts";
import { type KubeObject, type KubeStore, kubeTime } from "./store.ts";

/**
 * A simulated Job controller: no pods are run, each Job's one pod "runs" for `runMs` of the
 * injected clock from the Job's creation, and its outcome is read from the pod template:
 *
 * - the Job **fails** when its first container's `command` and `args`, joined by spaces, say
 *   `exit N` with N other than 0 (the last such phrase decides: `["sh", "-c", "exit 1"]`);
 * - it **completes** otherwise (`["sh", "-c", "exit 0"]`, `["true"]`, any other command).
 *
 * While it runs its status is `startTime` and `active: 1`; then, as the Job controller writes it,
 * `succeeded: 1` (or `failed: 1`), `completionTime` on success, and the conditions
 * `SuccessCriteriaMet` and `Complete` (or `FailureTarget` and `Failed`), status `"True"`, with
 * the reasons and messages of Kubernetes 1.32. The same Job always ends the same way, after the
 * same virtual time.
 */

const JOBS = RESOURCE_TYPES.find((t) => t.resource === "jobs")!;

/** How long a Job's pod runs by default, in milliseconds of the injected clock. */
export const DEFAULT_JOB_RUN_MS = 2000;

/** The exit code the first container's command line says, 0 when it names none. */
export function jobExitCode(job: KubeObject): number {
  const template = (job.spec as { template?: { spec?: { containers?: Json[] } } } | undefined)?.template;
  const container = template?.spec?.containers?.[0] as { command?: Json; args?: Json } | undefined;
  const words = [container?.command, container?.args]
    .flatMap((part) => (Array.isArray(part) ? part : []))
    .filter((w): w is string => typeof w === "string");
  const said = [...words.join(" ").matchAll(/\bexit\s+(\d+)\b/g)];
  const last = said.at(-1);
  return last ? Number(last[1]) : 0;
}

interface JobCondition {
  type: string;
  status: "True";
  lastProbeTime: string;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

function condition(type: string, reason: string, message: string, time: string): JobCondition {
  return { type, status: "True", lastProbeTime: time, lastTransitionTime: time, reason, message };
}

/** The status a Job has at `now`, given when it was created (epoch milliseconds). */
function jobStatus(
  job: KubeObject,
  createdMs: number,
  now: number,
  runMs: number,
  exitCode: (job: KubeObject) => number,
): Record<string, Json> {
  const started = kubeTime(createdMs);
  if (now < createdMs + runMs) {
    return { startTime: started, active: 1, ready: 0, terminating: 0, uncountedTerminatedPods: {} };
  }
  const ended = kubeTime(createdMs + runMs);
  const code = exitCode(job);
  if (code === 0) {
    return {
      startTime: started,
      completionTime: ended,
      succeeded: 1,
      ready: 0,
      terminating: 0,
      uncountedTerminatedPods: {},
      conditions: [
        condition(
          "SuccessCriteriaMet",
          "CompletionsReached",
          "Reached expected number of succeeded pods",
          ended,
        ),
        condition("Complete", "CompletionsReached", "Reached expected number of succeeded pods", ended),
      ] as unknown as Json,
    };
  }
  return {
    startTime: started,
    failed: 1,
    ready: 0,
    terminating: 0,
    uncountedTerminatedPods: {},
    conditions: [
      condition(
        "FailureTarget",
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
        ended,
      ),
      condition("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit", ended),
    ] as unknown as Json,
  };
}

/**
 * Brings every Job's status to the clock's time; writes only a status that changed, so an idle
 * Job keeps its resourceVersion. `created` keeps each Job's creation in milliseconds (the
 * creationTimestamp has seconds only).
 */
export function syncJobs(
  store: KubeStore,
  now: number,
  runMs: number,
  created: Map<string, number>,
  exitCode: (job: KubeObject) => number = jobExitCode,
): void {
  const seen = new Set<string>();
  for (const job of store.list(JOBS)) {
    const uid = job.metadata.uid ?? "";
    seen.add(uid);
    let createdMs = created.get(uid);
    if (createdMs === undefined) {
      createdMs = now;
      created.set(uid, now);
    }
    const status = jobStatus(job, createdMs, now, runMs, exitCode);
    if (JSON.stringify(status) === JSON.stringify(job.status ?? {})) continue;
    store.update(JOBS, job.metadata.namespace, { ...job, status }, "status");
  }
  for (const uid of created.keys()) if (!seen.has(uid)) created.delete(uid);
}
