import { randomInt } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import type { Clock } from "../../functions/clock.ts";
import { canonicalJson } from "../../statemachine/revision.ts";
import { DEFAULT_JOB_RUN_MS, syncJobs } from "./jobs.ts";
import type { Json } from "./patch.ts";
import { PORT_ANNOTATION, type PodBacker, type PodInfo, PodProcesses } from "./pods.ts";
import { RESOURCE_TYPES } from "./resources.ts";
import { type KubeObject, type KubeStore, kubeTime } from "./store.ts";

/**
 * A simulated Deployment controller (and ReplicaSet controller), enough for a rollout to read
 * what it reads on a cluster:
 *
 * - a Deployment's template is hashed into `pod-template-hash`; each template has its ReplicaSet
 *   `<deployment>-<hash>` (revision annotation as kube-controller-manager writes it), which owns
 *   pods `<replicaset>-<5 chars>` carrying the template's labels, the hash label and the image;
 * - a pod is ready `readyAfterMs` after it is created (on the injected clock, so a ManualClock
 *   moves it in virtual time), once its backing process listens when it has one, and never when
 *   `neverReady` says its image is broken;
 * - a rolling update brings the new ReplicaSet to `spec.replicas` at once and scales the old ones
 *   to 0 when the new one's pods are all available (Recreate: the old ones first);
 * - `status` is computed as the Deployment controller computes it: `replicas`, `updatedReplicas`,
 *   `readyReplicas`, `availableReplicas`, `unavailableReplicas` (zeros omitted, as the API
 *   marshals them), `observedGeneration`, and the `Available` and `Progressing` conditions with
 *   their reasons and messages (`NewReplicaSetCreated`, `ReplicaSetUpdated`,
 *   `NewReplicaSetAvailable`, and `ProgressDeadlineExceeded` with `ReplicaSet "x-abc" has timed
 *   out progressing.` once `progressDeadlineSeconds` pass without progress).
 *
 * `sync()` reconciles everything at the clock's current time; it writes only what changed, so an
 * idle Deployment keeps its resourceVersion. Not simulated: `maxSurge`/`maxUnavailable` steps,
 * `minReadySeconds`, `paused` (it stops scaling, nothing else), `revisionHistoryLimit` (old
 * ReplicaSets are kept at 0), pod restarts and node placement.
 */

export interface ControllerOptions {
  clock: Clock;
  /** How long after its creation a pod becomes ready (default 1000 ms). */
  readyAfterMs?: number;
  /**
   * Whether a pod never becomes ready (its readiness probe never passes), from its image; by
   * default an image whose tag contains `never-ready` (`registry/app:v3-never-ready`).
   */
  neverReady?: (image: string, pod: KubeObject) => boolean;
  /** Starts a real process behind each pod (see `pods.ts`). */
  backPod?: PodBacker;
  /** How long a Job's pod runs before the Job completes or fails (default 2000 ms; see `jobs.ts`). */
  jobRunMs?: number;
  /**
   * The exit code of a Job's pod: by default what its command line says (`exit 1`, see `jobs.ts`);
   * a scenario gives its own, as the program a real Job runs would decide it.
   */
  jobExitCode?: (job: KubeObject) => number;
}

const DEPLOYMENTS = RESOURCE_TYPES.find((t) => t.resource === "deployments")!;
const REPLICA_SETS = RESOURCE_TYPES.find((t) => t.resource === "replicasets")!;
const PODS = RESOURCE_TYPES.find((t) => t.resource === "pods")!;

export const TEMPLATE_HASH_LABEL = "pod-template-hash";
export const REVISION_ANNOTATION = "deployment.kubernetes.io/revision";
const DEFAULT_DEADLINE_SECONDS = 600;

/** The alphabet client-go's `rand.SafeEncodeString` uses (no vowels, no look-alikes). */
const SAFE = "bcdfghjklmnpqrstvwxz2456789";

function safeEncode(text: string): string {
  return [...text].map((c) => SAFE[c.charCodeAt(0) % SAFE.length]).join("");
}

/**
 * The pod-template-hash of a template: FNV-1a (32 bits) of the template, its decimal digits
 * encoded as `SafeEncodeString` does, as the Deployment controller names ReplicaSets.
 */
export function templateHash(template: unknown): string {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(canonicalJson(template), "utf8")) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return safeEncode(String(hash));
}

function randomSuffix(): string {
  return Array.from({ length: 5 }, () => SAFE[randomInt(SAFE.length)]).join("");
}

interface Condition {
  type: string;
  status: "True" | "False";
  reason: string;
  message: string;
  lastUpdateTime: string;
  lastTransitionTime: string;
}

/** Omits the zero counts, as `omitempty` does on the wire. */
function counts(values: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== 0));
}

function imagesOf(template: KubeObject | { [key: string]: Json } | undefined): string[] {
  const spec = (template as { spec?: { containers?: Array<{ image?: string }> } } | undefined)?.spec;
  return (spec?.containers ?? []).map((c) => c.image ?? "");
}

/** The maxUnavailable of a Deployment in pods (default 25% rounded down; 0 for Recreate). */
function maxUnavailable(deployment: KubeObject, replicas: number): number {
  const strategy = deployment.spec?.strategy as
    | { type?: string; rollingUpdate?: { maxUnavailable?: number | string } }
    | undefined;
  if (strategy?.type === "Recreate") return 0;
  const value = strategy?.rollingUpdate?.maxUnavailable ?? "25%";
  if (typeof value === "number") return Math.min(value, replicas);
  const percent = /^(\d+)%$/.exec(value);
  return percent ? Math.floor((replicas * Number(percent[1])) / 100) : 0;
}

/** A pod template as the controller reads it: its labels, and a spec it copies into pods. */
type Template = { metadata?: { labels?: Record<string, string> }; spec?: Json };

/** A Deployment's conditions as one reconcile updates them, at one time. */
class Conditions {
  readonly #list: Condition[];
  readonly #time: string;

  constructor(previous: Json | undefined, time: string) {
    this.#list = ((previous ?? []) as unknown as Condition[]).map((c) => ({ ...c }));
    this.#time = time;
  }

  /** The condition of this type as it stands, if the Deployment has one. */
  get(type: string): Condition | undefined {
    return this.#list.find((c) => c.type === type);
  }

  /**
   * Sets a condition, unless it already has this status and reason and `touch` is false. Its
   * transition time moves only when the status changes; `touch` moves its update time, which the
   * progress deadline counts from.
   */
  set(type: string, status: "True" | "False", reason: string, message: string, touch: boolean): void {
    const at = this.#list.findIndex((c) => c.type === type);
    const old = this.#list[at];
    if (old && old.status === status && old.reason === reason && !touch) return;
    const next: Condition = {
      type,
      status,
      reason,
      message,
      lastUpdateTime: this.#time,
      lastTransitionTime: old && old.status === status ? old.lastTransitionTime : this.#time,
    };
    if (at >= 0) this.#list[at] = next;
    else this.#list.push(next);
  }

  /** `Available` first, then `Progressing`, as the API server shows them. */
  sorted(): Condition[] {
    const order = (c: Condition) => (c.type === "Available" ? 0 : c.type === "Progressing" ? 1 : 2);
    return this.#list.sort((a, b) => order(a) - order(b));
  }
}

/** What a Deployment's conditions follow from, at one reconcile. */
interface ConditionFacts {
  time: string;
  now: number;
  /** At least `replicas - maxUnavailable` pods are ready. */
  available: boolean;
  /** The new ReplicaSet was created or found in this reconcile. */
  event: { reason: string; message: string } | undefined;
  paused: boolean;
  /** Every pod is of the new template, and ready. */
  complete: boolean;
  /** More pods are updated or ready, or fewer old ones run, than the last status said. */
  progressed: boolean;
  rsName: string;
  deadlineSeconds: number;
}

/** The Deployment's `Available` and `Progressing` conditions, from its previous ones and the facts. */
function deploymentConditions(previous: Json | undefined, facts: ConditionFacts): Condition[] {
  const conditions = new Conditions(previous, facts.time);
  if (facts.available)
    conditions.set(
      "Available",
      "True",
      "MinimumReplicasAvailable",
      "Deployment has minimum availability.",
      false,
    );
  else
    conditions.set(
      "Available",
      "False",
      "MinimumReplicasUnavailable",
      "Deployment does not have minimum availability.",
      false,
    );
  setProgressing(conditions, facts);
  return conditions.sorted();
}

/**
 * The `Progressing` condition: a new ReplicaSet, a pause, completion, progress, or, once the
 * progress deadline passes without any, `ProgressDeadlineExceeded`.
 */
function setProgressing(conditions: Conditions, facts: ConditionFacts): void {
  const { event, rsName } = facts;
  const progressing = conditions.get("Progressing");
  if (event) conditions.set("Progressing", "True", event.reason, event.message, true);
  else if (facts.paused) {
    conditions.set("Progressing", "Unknown" as "True", "DeploymentPaused", "Deployment is paused", false);
  } else if (facts.complete) {
    conditions.set(
      "Progressing",
      "True",
      "NewReplicaSetAvailable",
      `ReplicaSet "${rsName}" has successfully progressed.`,
      false,
    );
  } else if (facts.progressed) {
    conditions.set(
      "Progressing",
      "True",
      "ReplicaSetUpdated",
      `ReplicaSet "${rsName}" is progressing.`,
      true,
    );
  } else if (progressing && progressing.reason !== "NewReplicaSetAvailable") {
    if (
      progressing.reason === "ProgressDeadlineExceeded" ||
      Date.parse(progressing.lastUpdateTime) + facts.deadlineSeconds * 1000 < facts.now
    ) {
      conditions.set(
        "Progressing",
        "False",
        "ProgressDeadlineExceeded",
        `ReplicaSet "${rsName}" has timed out progressing.`,
        false,
      );
    }
  } else if (!progressing) {
    conditions.set(
      "Progressing",
      "True",
      "ReplicaSetUpdated",
      `ReplicaSet "${rsName}" is progressing.`,
      true,
    );
  }
}

export class DeploymentController {
  readonly #store: KubeStore;
  readonly #clock: Clock;
  readonly #readyAfterMs: number;
  readonly #neverReady: (image: string, pod: KubeObject) => boolean;
  readonly processes: PodProcesses;
  /** Each pod's creation time in milliseconds (creationTimestamp has seconds only). */
  readonly #created = new Map<string, number>();
  readonly #unsubscribe: () => void;
  readonly #jobRunMs: number;
  readonly #jobExitCode: ((job: KubeObject) => number) | undefined;
  /** Each Job's creation time in milliseconds, from the store's ADDED event. */
  readonly #jobsCreated = new Map<string, number>();
  #syncing = false;

  constructor(store: KubeStore, options: ControllerOptions) {
    this.#store = store;
    this.#clock = options.clock;
    this.#readyAfterMs = options.readyAfterMs ?? 1000;
    if (!Number.isFinite(this.#readyAfterMs) || this.#readyAfterMs < 0) {
      throw new RangeError(`readyAfterMs must be a number ≥ 0, got ${options.readyAfterMs}`);
    }
    this.#jobRunMs = options.jobRunMs ?? DEFAULT_JOB_RUN_MS;
    this.#jobExitCode = options.jobExitCode;
    if (!Number.isFinite(this.#jobRunMs) || this.#jobRunMs < 0) {
      throw new RangeError(`jobRunMs must be a number ≥ 0, got ${options.jobRunMs}`);
    }
    this.#neverReady = options.neverReady ?? ((image) => /:[^/]*never-ready/.test(image));
    this.processes = new PodProcesses(options.backPod, () => this.sync());
    this.#unsubscribe = store.subscribe((event) => {
      if (event.resource.resource === "jobs" && event.type === "ADDED" && event.object.metadata.uid) {
        this.#jobsCreated.set(event.object.metadata.uid, this.#clock.now());
      }
      if (event.resource.resource === "pods" && event.type === "DELETED" && event.object.metadata.uid) {
        this.#created.delete(event.object.metadata.uid);
        void this.processes.stop(event.object.metadata.uid);
      }
    });
  }

  /** Reconciles every Deployment, ReplicaSet, pod and Job at the clock's time. */
  sync(): void {
    if (this.#syncing) return;
    this.#syncing = true;
    try {
      this.#collectGarbage();
      for (const deployment of this.#store.list(DEPLOYMENTS)) this.#reconcile(deployment);
      // A ReplicaSet no Deployment owns (an experiment's) is scaled by the ReplicaSet controller alone.
      const now = this.#clock.now();
      for (const rs of this.#store.list(REPLICA_SETS)) {
        if (!rs.metadata.ownerReferences?.some((r) => r.kind === "Deployment")) this.#syncReplicaSet(rs, now);
      }
      syncJobs(this.#store, now, this.#jobRunMs, this.#jobsCreated, this.#jobExitCode);
    } finally {
      this.#syncing = false;
    }
  }

  /** Stops observing the store and stops every backing process. */
  async close(): Promise<void> {
    this.#unsubscribe();
    await this.processes.stopAll();
  }

  /** Deletes ReplicaSets whose Deployment is gone and pods whose ReplicaSet is gone. */
  #collectGarbage(): void {
    const uids = new Set(this.#store.list(DEPLOYMENTS).map((d) => d.metadata.uid));
    for (const rs of this.#store.list(REPLICA_SETS)) {
      const owner = rs.metadata.ownerReferences?.[0];
      if (owner && !uids.has(owner.uid))
        this.#store.delete(REPLICA_SETS, rs.metadata.namespace, rs.metadata.name);
    }
    const rsUids = new Set(this.#store.list(REPLICA_SETS).map((rs) => rs.metadata.uid));
    for (const pod of this.#store.list(PODS)) {
      const owner = pod.metadata.ownerReferences?.[0];
      if (owner && !rsUids.has(owner.uid))
        this.#store.delete(PODS, pod.metadata.namespace, pod.metadata.name);
    }
  }

  #ownedBy(type: typeof PODS, namespace: string, uid: string | undefined): KubeObject[] {
    return this.#store
      .list(type, namespace)
      .filter((o) => o.metadata.ownerReferences?.some((r) => r.uid === uid));
  }

  /**
   * Reconciles one Deployment: its template's ReplicaSet (found or created), the rolling update
   * unless it is paused, each ReplicaSet's pods, and the Deployment's status.
   */
  #reconcile(deployment: KubeObject): void {
    const now = this.#clock.now();
    const namespace = deployment.metadata.namespace!;
    const spec = deployment.spec ?? {};
    const replicas = typeof spec.replicas === "number" ? spec.replicas : 1;
    const owned = this.#ownedBy(REPLICA_SETS, namespace, deployment.metadata.uid);
    const { newRS, event } = this.#templateReplicaSet(deployment, owned);
    const oldRSs = owned.filter((rs) => rs.metadata.uid !== newRS.metadata.uid);
    if (spec.paused !== true) this.#rollOut(deployment, newRS, oldRSs, replicas, now);
    const all = [newRS, ...oldRSs].map((rs) =>
      this.#syncReplicaSet(this.#store.get(REPLICA_SETS, namespace, rs.metadata.name), now),
    );
    this.#syncDeploymentStatus(deployment, replicas, newRS.metadata.name, all, event, now);
  }

  /**
   * The ReplicaSet of the Deployment's current template, by its pod-template-hash: created when
   * there is none, given the next revision when an older template's ReplicaSet is back. The event
   * says which, for the `Progressing` condition.
   */
  #templateReplicaSet(
    deployment: KubeObject,
    owned: KubeObject[],
  ): { newRS: KubeObject; event?: { reason: string; message: string } } {
    const template = (deployment.spec?.template ?? {}) as Template;
    const hash = templateHash(template);
    const revisions = owned.map((rs) => Number(rs.metadata.annotations?.[REVISION_ANNOTATION] ?? 0));
    const maxRevision = Math.max(0, ...revisions);
    const found = owned.find((rs) => rs.metadata.labels?.[TEMPLATE_HASH_LABEL] === hash);
    if (!found) {
      const newRS = this.#createReplicaSet(deployment, template, hash, maxRevision + 1);
      return {
        newRS,
        event: {
          reason: "NewReplicaSetCreated",
          message: `Created new replica set "${newRS.metadata.name}"`,
        },
      };
    }
    if (Number(found.metadata.annotations?.[REVISION_ANNOTATION] ?? 0) < maxRevision) {
      found.metadata.annotations = {
        ...found.metadata.annotations,
        [REVISION_ANNOTATION]: String(maxRevision + 1),
      };
      const newRS = this.#store.update(REPLICA_SETS, deployment.metadata.namespace!, found);
      return {
        newRS,
        event: { reason: "FoundNewReplicaSet", message: `Found new replica set "${newRS.metadata.name}"` },
      };
    }
    return { newRS: found };
  }

  /**
   * A new ReplicaSet `<deployment>-<hash>` for a template, at 0 replicas: its labels and selector
   * carry the hash, and it is owned by the Deployment, as the Deployment controller creates it.
   */
  #createReplicaSet(deployment: KubeObject, template: Template, hash: string, revision: number): KubeObject {
    const name = deployment.metadata.name;
    const labels = { ...(template.metadata?.labels ?? {}), [TEMPLATE_HASH_LABEL]: hash };
    const selector = structuredClone(
      (deployment.spec?.selector ?? {}) as { matchLabels?: Record<string, string> },
    );
    selector.matchLabels = { ...(selector.matchLabels ?? {}), [TEMPLATE_HASH_LABEL]: hash };
    return this.#store.create(REPLICA_SETS, deployment.metadata.namespace!, {
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      metadata: {
        name: `${name}-${hash}`,
        labels,
        annotations: { [REVISION_ANNOTATION]: String(revision) },
        ownerReferences: [
          {
            apiVersion: "apps/v1",
            kind: "Deployment",
            name,
            uid: deployment.metadata.uid!,
            controller: true,
          },
        ],
      },
      spec: {
        replicas: 0,
        selector: selector as Json,
        template: {
          ...structuredClone(template),
          metadata: { ...(template.metadata ?? {}), labels },
        } as Json,
      },
    });
  }

  /**
   * The rolling update in one step: the new ReplicaSet to `replicas` at once, the old ones to 0
   * when its pods are all available. Recreate scales the old ones to 0 first and the new one up
   * once their pods are gone.
   */
  #rollOut(
    deployment: KubeObject,
    newRS: KubeObject,
    oldRSs: KubeObject[],
    replicas: number,
    now: number,
  ): void {
    const recreate = (deployment.spec?.strategy as { type?: string } | undefined)?.type === "Recreate";
    const newAvailable = this.#podsOf(newRS).filter((p) => this.#isReady(p, now)).length;
    const oldPods = oldRSs.reduce((n, rs) => n + this.#podsOf(rs).length, 0);
    if (!recreate || oldPods === 0) this.#scale(newRS, replicas);
    if (recreate || newAvailable >= replicas) for (const rs of oldRSs) this.#scale(rs, 0);
  }

  /**
   * The Deployment's status from its ReplicaSets' (the new one first): the counts, and the
   * conditions as they follow from them and from the last status. Written only when it changed.
   */
  #syncDeploymentStatus(
    deployment: KubeObject,
    replicas: number,
    rsName: string,
    all: Array<{ pods: number; ready: number; wanted: number }>,
    event: { reason: string; message: string } | undefined,
    now: number,
  ): void {
    const namespace = deployment.metadata.namespace!;
    const spec = deployment.spec ?? {};
    const [fresh] = all;
    const current = this.#store.get(DEPLOYMENTS, namespace, deployment.metadata.name);
    const before = (current.status ?? {}) as Record<string, Json>;
    const total = all.reduce((n, s) => n + s.pods, 0);
    const ready = all.reduce((n, s) => n + s.ready, 0);
    const updated = fresh!.pods;
    const unavailable = Math.max(0, all.reduce((n, s) => n + s.wanted, 0) - ready);
    const oldReplicas = total - updated;
    const conditions = deploymentConditions(before.conditions, {
      time: kubeTime(now),
      now,
      available: ready >= replicas - maxUnavailable(current, replicas),
      event,
      paused: spec.paused === true,
      complete: updated === replicas && total === replicas && ready === replicas,
      progressed:
        updated > Number(before.updatedReplicas ?? 0) ||
        ready > Number(before.readyReplicas ?? 0) ||
        ready > Number(before.availableReplicas ?? 0) ||
        oldReplicas < Number(before.replicas ?? 0) - Number(before.updatedReplicas ?? 0),
      rsName,
      deadlineSeconds:
        typeof spec.progressDeadlineSeconds === "number"
          ? spec.progressDeadlineSeconds
          : DEFAULT_DEADLINE_SECONDS,
    });
    const status = {
      observedGeneration: current.metadata.generation ?? 1,
      ...counts({
        replicas: total,
        updatedReplicas: updated,
        readyReplicas: ready,
        availableReplicas: ready,
        unavailableReplicas: unavailable,
      }),
      conditions: conditions as unknown as Json,
    };
    if (!isDeepStrictEqual(status, current.status)) {
      this.#store.update(DEPLOYMENTS, namespace, { ...current, status }, "status");
    }
  }

  #podsOf(rs: KubeObject): KubeObject[] {
    return this.#ownedBy(PODS, rs.metadata.namespace!, rs.metadata.uid);
  }

  #scale(rs: KubeObject, replicas: number): void {
    const current = this.#store.get(REPLICA_SETS, rs.metadata.namespace, rs.metadata.name);
    if (current.spec?.replicas === replicas) return;
    this.#store.update(REPLICA_SETS, current.metadata.namespace, {
      ...current,
      spec: { ...current.spec, replicas },
    });
  }

  #isReady(pod: KubeObject, now: number): boolean {
    const uid = pod.metadata.uid!;
    const created = this.#created.get(uid) ?? Date.parse(pod.metadata.creationTimestamp ?? "");
    const images = imagesOf(pod);
    if (images.some((image) => this.#neverReady(image, pod))) return false;
    if (!this.processes.state(uid).up) return false;
    return now >= created + this.#readyAfterMs;
  }

  /** Brings a ReplicaSet's pods to its replicas, updates their readiness and its status. */
  #syncReplicaSet(rs: KubeObject, now: number): { pods: number; ready: number; wanted: number } {
    const namespace = rs.metadata.namespace!;
    const wanted = typeof rs.spec?.replicas === "number" ? rs.spec.replicas : 0;
    let pods = this.#podsOf(rs);
    const template = (rs.spec?.template ?? {}) as {
      metadata?: { labels?: Record<string, string> };
      spec?: Json;
    };
    for (let i = pods.length; i < wanted; i++) {
      const pod = this.#store.create(PODS, namespace, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name: `${rs.metadata.name}-${randomSuffix()}`,
          labels: { ...(template.metadata?.labels ?? {}) },
          ownerReferences: [
            {
              apiVersion: "apps/v1",
              kind: "ReplicaSet",
              name: rs.metadata.name,
              uid: rs.metadata.uid!,
              controller: true,
            },
          ],
        },
        spec: structuredClone((template.spec ?? {}) as { [key: string]: Json }),
        status: { phase: "Pending" },
      });
      this.#created.set(pod.metadata.uid!, now);
      const images = imagesOf(pod);
      const info: PodInfo = {
        namespace,
        name: pod.metadata.name,
        labels: pod.metadata.labels ?? {},
        image: images[0] ?? "",
        images,
        ...(rs.metadata.ownerReferences?.[0] ? { deployment: rs.metadata.ownerReferences[0].name } : {}),
      };
      this.processes.start(pod.metadata.uid!, info);
      pods.push(pod);
    }
    if (pods.length > wanted) {
      // Not-ready pods go first, then the newest, as the ReplicaSet controller picks them.
      const doomed = [...pods]
        .sort((a, b) => {
          const ra = this.#isReady(a, now) ? 1 : 0;
          const rb = this.#isReady(b, now) ? 1 : 0;
          if (ra !== rb) return ra - rb;
          return (this.#created.get(b.metadata.uid!) ?? 0) - (this.#created.get(a.metadata.uid!) ?? 0);
        })
        .slice(0, pods.length - wanted);
      for (const pod of doomed) this.#store.delete(PODS, namespace, pod.metadata.name);
      const gone = new Set(doomed.map((p) => p.metadata.uid));
      pods = pods.filter((p) => !gone.has(p.metadata.uid));
    }
    let ready = 0;
    for (const pod of pods) {
      const isReady = this.#isReady(pod, now);
      if (isReady) ready++;
      this.#syncPodStatus(pod, isReady, now);
    }
    const status = {
      ...counts({
        replicas: pods.length,
        fullyLabeledReplicas: pods.length,
        readyReplicas: ready,
        availableReplicas: ready,
      }),
      observedGeneration: rs.metadata.generation ?? 1,
    };
    if (!isDeepStrictEqual(status, rs.status))
      this.#store.update(REPLICA_SETS, namespace, { ...rs, status }, "status");
    return { pods: pods.length, ready, wanted };
  }

  #syncPodStatus(pod: KubeObject, ready: boolean, now: number): void {
    const uid = pod.metadata.uid!;
    const created = kubeTime(this.#created.get(uid) ?? now);
    const backing = this.processes.state(uid);
    const containers = (pod.spec?.containers ?? []) as Array<{ name?: string; image?: string }>;
    const started = backing.up;
    const flag = (b: boolean) => (b ? "True" : "False");
    const status = {
      phase: started ? "Running" : "Pending",
      conditions: [
        { type: "PodScheduled", status: "True", lastTransitionTime: created },
        { type: "Initialized", status: "True", lastTransitionTime: created },
        { type: "ContainersReady", status: flag(ready) },
        { type: "Ready", status: flag(ready) },
      ],
      hostIP: "127.0.0.1",
      podIP: backing.port !== undefined || !this.processes.backer ? this.#podIP(pod) : undefined,
      startTime: created,
      containerStatuses: containers.map((c) => ({
        name: c.name ?? "",
        image: c.image ?? "",
        ready,
        started,
        restartCount: 0,
        state: started
          ? { running: { startedAt: created } }
          : {
              waiting: {
                reason: backing.error ? "CrashLoopBackOff" : "ContainerCreating",
                ...(backing.error ? { message: backing.error } : {}),
              },
            },
      })),
    };
    if (status.podIP === undefined) delete status.podIP;
    const annotations = { ...(pod.metadata.annotations ?? {}) };
    if (backing.port !== undefined) annotations[PORT_ANNOTATION] = String(backing.port);
    if (!isDeepStrictEqual(annotations, pod.metadata.annotations ?? {})) {
      pod = this.#store.update(PODS, pod.metadata.namespace, {
        ...pod,
        metadata: { ...pod.metadata, annotations },
      });
    }
    if (!isDeepStrictEqual(status, pod.status)) {
      this.#store.update(
        PODS,
        pod.metadata.namespace,
        { ...pod, status: status as unknown as { [key: string]: Json } },
        "status",
      );
    }
  }

  /** 127.0.0.1 for a backed pod (its port tells it apart); else an address from 10.244.0.0/16. */
  #podIP(pod: KubeObject): string {
    if (this.processes.backer) return "127.0.0.1";
    const existing = pod.status?.podIP;
    if (typeof existing === "string") return existing;
    this.#nextIP += 1;
    return `10.244.${Math.floor(this.#nextIP / 254) % 256}.${(this.#nextIP % 254) + 1}`;
  }

  #nextIP = 0;
}
