import { TargetConfigurationError, TargetNotReadyError } from "../errors.ts";
import { type KubeClient, type KubeObject, RESOURCES } from "./client.ts";
import { type Decision, record, records, updateObject } from "./objects.ts";

/**
 * The Deployments of the kubernetes target: their image, their replicas, and their readiness
 * as the Deployment controller reports it.
 */

/** What one Deployment looks like to the target. */
export interface DeploymentView {
  readonly name: string;
  readonly replicas: number;
  readonly image: string;
  readonly available: number;
  /** The pod template's labels (blue/green's Services select one of them). */
  readonly podLabels: Record<string, string>;
}

/** A readiness wait: this Deployment at this image with this many updated, available pods. */
export interface DeploymentWait {
  readonly deployment: string;
  readonly replicas: number;
  readonly image?: string;
}

export class Deployments {
  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    private readonly container: string | undefined,
  ) {}

  /** The Deployment as the API holds it (an experiment copies its pod template and selector). */
  async object(name: string): Promise<KubeObject> {
    return this.client.require(RESOURCES.deployments, this.namespace, name);
  }

  async read(name: string): Promise<DeploymentView> {
    return this.view(await this.client.require(RESOURCES.deployments, this.namespace, name));
  }

  view(object: KubeObject): DeploymentView {
    const name = object.metadata.name;
    const spec = object.spec ?? {};
    const template = record(spec, "template");
    return {
      name,
      replicas: typeof spec.replicas === "number" ? spec.replicas : 1,
      image: String(this.#container(object).image ?? ""),
      available: Number(object.status?.availableReplicas ?? 0),
      podLabels: { ...((record(template, "metadata").labels as Record<string, string> | undefined) ?? {}) },
    };
  }

  /**
   * Sets a Deployment's replicas and, when given, the container's image, conditionally on what
   * was read; `expectReplicas` (when given) must be what the Deployment has or already `replicas`,
   * otherwise nothing is written and the replicas found are returned as `changed`.
   */
  async set(
    name: string,
    change: { replicas: number; image?: string; expectReplicas?: number },
  ): Promise<{ changed?: number }> {
    return updateObject(
      this.client,
      RESOURCES.deployments,
      this.namespace,
      name,
      (object): Decision<{ changed?: number }> => {
        const view = this.view(object);
        if (
          change.expectReplicas !== undefined &&
          view.replicas !== change.expectReplicas &&
          view.replicas !== change.replicas
        ) {
          return { skip: true, result: { changed: view.replicas } };
        }
        if (
          view.replicas === change.replicas &&
          (change.image === undefined || view.image === change.image)
        ) {
          return { skip: true, result: {} };
        }
        const spec = record(object, "spec");
        spec.replicas = change.replicas;
        if (change.image !== undefined) this.#container(object).image = change.image;
        return { write: object, result: {} };
      },
    );
  }

  /**
   * One poll: ready when the controller has seen the latest spec and the Deployment has the wanted
   * pods, all updated (the image) and available, and no old pod left. A `Progressing` condition
   * with reason `ProgressDeadlineExceeded` fails with the Deployment's own message; so does our
   * own deadline, with the counts.
   */
  async poll(
    wait: DeploymentWait,
    deadlineAt: number,
    now: number,
    what: string,
  ): Promise<{ ready: boolean; message: string }> {
    const object = await this.client.require(RESOURCES.deployments, this.namespace, wait.deployment);
    const view = this.view(object);
    const status = object.status ?? {};
    const where = `Deployment ${this.namespace}/${wait.deployment}`;
    if (wait.image !== undefined && view.image !== wait.image) {
      throw new TargetNotReadyError(
        `${what} on ${where}: it runs ${view.image} instead of ${wait.image}; another deployment replaced it`,
      );
    }
    const observed = Number(status.observedGeneration ?? 0) >= Number(object.metadata.generation ?? 0);
    const updated = Number(status.updatedReplicas ?? 0);
    const available = Number(status.availableReplicas ?? 0);
    const total = Number(status.replicas ?? 0);
    const progress = `${updated}/${wait.replicas} updated, ${available} available, ${total} in all`;
    const stalled = records(status, "conditions").find(
      (c) => c.type === "Progressing" && c.status === "False" && c.reason === "ProgressDeadlineExceeded",
    );
    if (stalled) {
      throw new TargetNotReadyError(
        `${what} on ${where} failed: ${String(stalled.message ?? "ProgressDeadlineExceeded")} (${progress})`,
      );
    }
    const ready =
      observed &&
      view.replicas === wait.replicas &&
      (wait.replicas === 0
        ? total === 0
        : updated >= wait.replicas && available >= wait.replicas && total === wait.replicas);
    if (ready) return { ready: true, message: `${what} on ${where} is ready: ${progress}` };
    if (now >= deadlineAt) {
      throw new TargetNotReadyError(
        `${what} on ${where} did not become ready before its progress deadline (${new Date(deadlineAt).toISOString()}): ${progress}`,
      );
    }
    return { ready: false, message: `${what} on ${where} is not ready yet: ${progress}` };
  }

  #container(object: KubeObject): Record<string, unknown> {
    const podSpec = record(record(record(object, "spec"), "template"), "spec");
    const containers = records(podSpec, "containers");
    const found =
      this.container === undefined ? containers[0] : containers.find((c) => c.name === this.container);
    if (!found) {
      throw new TargetConfigurationError(
        `Deployment ${this.namespace}/${object.metadata.name} has no container ${this.container === undefined ? "" : `"${this.container}" `}(it has ${containers.map((c) => String(c.name)).join(", ") || "none"})`,
      );
    }
    return found;
  }
}
