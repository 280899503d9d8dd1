import { RESOURCE_TYPES } from "./resources.ts";
import { fromServiceSelector, matches } from "./selector.ts";
import type { KubeStore } from "./store.ts";

/**
 * Pods as local processes. The demo (or a test) may back each pod with something that really
 * answers HTTP, through a callback that starts it and says on which port; a backed pod is ready
 * only once its process listens, and its process is closed when the pod is deleted (scaled down,
 * replaced, its Deployment or namespace deleted). Without a callback a pod is a record only.
 *
 * `endpointsOf` is what a Service selects, as the endpoints controller computes it: the pods of
 * its namespace whose labels match its selector, ready or not, with the port a backed pod listens
 * on, so traffic can be sent to a Service's pods as kube-proxy would.
 */

/** What a backing process is given: the pod it backs. */
export interface PodInfo {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  /** The first container's image (`registry/app:v2`). */
  image: string;
  /** Every container's image, in order. */
  images: string[];
  /** The Deployment that owns the pod through its ReplicaSet, when it has one. */
  deployment?: string;
}

/** A running backing process: the port it listens on (127.0.0.1) and how to stop it. */
export interface PodBacking {
  port: number;
  close(): Promise<void> | void;
}

/** Starts the process behind a pod; a rejection leaves the pod running but never ready. */
export type PodBacker = (pod: PodInfo) => Promise<PodBacking> | PodBacking;

/** The annotation that names the port a backed pod listens on (its `podIP` is 127.0.0.1). */
export const PORT_ANNOTATION = "local.sfn-rollouts/port";

interface Entry {
  state: "starting" | "running" | "failed" | "stopped";
  backing?: PodBacking;
  error?: string;
}

export interface BackingState {
  /** Whether the process is there (always true without a backer). */
  up: boolean;
  port?: number;
  /** Why the process could not start. */
  error?: string;
}

/** The backing processes of the pods, by pod uid. */
export class PodProcesses {
  readonly #entries = new Map<string, Entry>();

  constructor(
    readonly backer: PodBacker | undefined,
    /** Called when a process has started or failed, so the pod's readiness is recomputed. */
    readonly onSettled: () => void,
  ) {}

  /** Starts the process of a new pod (once per uid). */
  start(uid: string, pod: PodInfo): void {
    if (!this.backer || this.#entries.has(uid)) return;
    const entry: Entry = { state: "starting" };
    this.#entries.set(uid, entry);
    Promise.resolve()
      .then(() => this.backer!(pod))
      .then(
        async (backing) => {
          if (entry.state === "stopped") {
            await backing.close();
            return;
          }
          entry.state = "running";
          entry.backing = backing;
          this.onSettled();
        },
        (error: unknown) => {
          if (entry.state === "stopped") return;
          entry.state = "failed";
          entry.error = error instanceof Error ? error.message : String(error);
          this.onSettled();
        },
      );
  }

  state(uid: string): BackingState {
    if (!this.backer) return { up: true };
    const entry = this.#entries.get(uid);
    if (entry?.state === "running") return { up: true, port: entry.backing!.port };
    return { up: false, ...(entry?.error ? { error: entry.error } : {}) };
  }

  /** Stops the process of a deleted pod. */
  async stop(uid: string): Promise<void> {
    const entry = this.#entries.get(uid);
    if (!entry) return;
    this.#entries.delete(uid);
    const running = entry.state === "running" ? entry.backing : undefined;
    entry.state = "stopped";
    await running?.close();
  }

  /** Stops every process. */
  async stopAll(): Promise<void> {
    await Promise.all([...this.#entries.keys()].map((uid) => this.stop(uid)));
  }
}

/** One pod a Service selects. */
export interface Endpoint {
  pod: string;
  ip: string;
  /** The port its process listens on, for a backed pod. */
  port?: number;
  ready: boolean;
  labels: Record<string, string>;
  image: string;
}

const SERVICES = RESOURCE_TYPES.find((t) => t.resource === "services")!;
const PODS = RESOURCE_TYPES.find((t) => t.resource === "pods")!;

/**
 * The pods a Service selects (ready ones and not), sorted by name; a Service without a selector
 * selects none. Throws the API's NotFound when the Service does not exist.
 */
export function endpointsOf(store: KubeStore, namespace: string, service: string): Endpoint[] {
  const svc = store.get(SERVICES, namespace, service);
  const selector = fromServiceSelector(svc.spec?.selector);
  if (!selector) return [];
  return store
    .list(PODS, namespace)
    .filter((pod) => matches(pod.metadata.labels, selector) && pod.status?.podIP)
    .map((pod) => {
      const port = pod.metadata.annotations?.[PORT_ANNOTATION];
      const conditions = (pod.status?.conditions ?? []) as Array<{ type: string; status: string }>;
      const containers = (pod.spec?.containers ?? []) as Array<{ image?: string }>;
      return {
        pod: pod.metadata.name,
        ip: String(pod.status?.podIP),
        ...(port !== undefined ? { port: Number(port) } : {}),
        ready: conditions.some((c) => c.type === "Ready" && c.status === "True"),
        labels: pod.metadata.labels ?? {},
        image: containers[0]?.image ?? "",
      };
    });
}
