import { TargetConfigurationError } from "../errors.ts";
import { type KubeClient, RESOURCES } from "./client.ts";
import type { DeploymentView } from "./deployments.ts";
import { type Decision, record, updateObject } from "./objects.ts";

/**
 * Blue/green by Service selector: the active and preview Services select the pods of one of two
 * Deployments by a label the target owns (`label: <Deployment name>` on each pod template), so
 * switching is one conditional write of one selector entry; the rest of the selector is the
 * user's and is left as it is.
 */
export class ServiceSelectors {
  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    private readonly label: string,
  ) {}

  /** The Deployment a Service selects now, or undefined when its selector lacks the label. */
  async selected(service: string): Promise<string | undefined> {
    const object = await this.client.require(RESOURCES.services, this.namespace, service);
    const value = (object.spec?.selector as Record<string, string> | undefined)?.[this.label];
    return value;
  }

  /**
   * Points a Service at a Deployment's pods. With `expected`, a Service that selects something
   * else (someone else switched it) is left alone and what it selects is returned as `drift`.
   */
  async point(service: string, deployment: string, expected?: string): Promise<{ drift?: string }> {
    return updateObject(
      this.client,
      RESOURCES.services,
      this.namespace,
      service,
      (object): Decision<{ drift?: string }> => {
        const selector = record(record(object, "spec"), "selector") as Record<string, string>;
        const now = selector[this.label];
        if (now === deployment) return { skip: true, result: {} };
        if (expected !== undefined && now !== expected)
          return { skip: true, result: { drift: now ?? "nothing" } };
        selector[this.label] = deployment;
        return { write: object, result: {} };
      },
    );
  }

  /** Both Deployments' pod templates must carry the label with their own name. */
  check(views: readonly DeploymentView[]): void {
    const wrong = views.filter((v) => v.podLabels[this.label] !== v.name);
    if (wrong.length > 0) {
      throw new TargetConfigurationError(
        wrong
          .map(
            (v) =>
              `Deployment ${this.namespace}/${v.name}: its pod template must carry the label ${this.label}: ${v.name} (it has ${v.podLabels[this.label] ?? "none"}), so that the Services can select it`,
          )
          .join("; "),
      );
    }
  }
}
