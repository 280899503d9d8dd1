import { TargetConfigurationError } from "../errors.ts";
import type { HeaderRoute } from "../port.ts";
import { type KubeClient, KubeConflictError, type KubeObject, RESOURCES } from "./client.ts";
import { type Decision, record, records, updateObject } from "./objects.ts";
import { prefixRegex, sameShare, type WeightRouter, type WeightWrite } from "./router.ts";

/**
 * NGINX ingress controller: a canary Ingress `<stableIngress>-canary`, a copy of the stable
 * Ingress's rules with the stable Service replaced by the canary one, annotated `canary: "true"`
 * and `canary-weight: n`. The target creates it at the first weight (or header route) and leaves
 * it at weight 0 afterwards. A header route is `canary-by-header` with `canary-by-header-value`
 * (exact) or `canary-by-header-pattern` (prefix, regex): NGINX takes one header.
 */
export class NginxRouter implements WeightRouter {
  readonly what: string;
  readonly #canaryIngress: string;

  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    private readonly settings: {
      stableIngress: string;
      stableService: string;
      canaryService: string;
      annotationPrefix: string;
    },
  ) {
    this.#canaryIngress = `${settings.stableIngress}-canary`;
    this.what = `Ingress ${namespace}/${this.#canaryIngress}`;
  }

  async read(): Promise<{ canary: number; shares: number[]; detail: string }> {
    const canary = await this.client.get(RESOURCES.ingresses, this.namespace, this.#canaryIngress);
    const share = canary ? this.#weight(canary) : 0;
    return {
      canary: share,
      shares: [share],
      detail: `${this.what}: ${canary ? `canary-weight ${share}` : "absent (weight 0)"}`,
    };
  }

  async write(target: number, expected: number | undefined): Promise<WeightWrite> {
    const detail = `${this.what}: canary-weight ${target}`;
    return this.#upsert<WeightWrite>((canary) => {
      const found = canary ? this.#weight(canary) : 0;
      if (expected !== undefined && !sameShare(found, expected)) {
        return {
          skip: true,
          result: { outcome: "drift", canary: found, detail: `${this.what}: canary-weight ${found}` },
        };
      }
      return {
        annotations: { [this.#key("canary-weight")]: String(target) },
        result: { outcome: "applied", detail },
      };
    });
  }

  async setHeaderRoute(route: HeaderRoute): Promise<string> {
    if (route.match.length !== 1) {
      throw new TargetConfigurationError(
        `header route ${route.name}: the NGINX ingress controller routes by one header (canary-by-header); this route has ${route.match.length}`,
      );
    }
    const [m] = route.match;
    if (!m) throw new TargetConfigurationError(`header route ${route.name} has no match`);
    const v = m.headerValue;
    const annotations: Record<string, string | undefined> = {
      [this.#key("canary-by-header")]: m.headerName,
      [this.#key("canary-by-header-value")]: v.exact,
      [this.#key("canary-by-header-pattern")]:
        v.exact !== undefined ? undefined : v.prefix !== undefined ? prefixRegex(v.prefix) : v.regex,
    };
    return this.#upsert(() => ({
      annotations,
      result: `${this.what}: requests with ${m.headerName} ${v.exact !== undefined ? `= ${v.exact}` : `matching ${annotations[this.#key("canary-by-header-pattern")]}`} go to ${this.settings.canaryService}`,
    }));
  }

  async removeHeaderRoute(name: string): Promise<string> {
    const canary = await this.client.get(RESOURCES.ingresses, this.namespace, this.#canaryIngress);
    if (!canary?.metadata.annotations?.[this.#key("canary-by-header")])
      return `${this.what}: no header route ${name}`;
    return this.#upsert(() => ({
      annotations: {
        [this.#key("canary-by-header")]: undefined,
        [this.#key("canary-by-header-value")]: undefined,
        [this.#key("canary-by-header-pattern")]: undefined,
      },
      result: `${this.what}: header route ${name} removed`,
    }));
  }

  #key(name: string): string {
    return `${this.settings.annotationPrefix}/${name}`;
  }

  #weight(canary: KubeObject): number {
    const value = Number(canary.metadata.annotations?.[this.#key("canary-weight")] ?? 0);
    return Number.isFinite(value) ? value : 0;
  }

  /**
   * Sets annotations on the canary Ingress (undefined removes one), creating it from the stable
   * Ingress when it does not exist; a creation that races another is re-decided like a conflict.
   */
  async #upsert<T>(
    decide: (
      canary: KubeObject | undefined,
    ) => { skip: true; result: T } | { annotations: Record<string, string | undefined>; result: T },
  ): Promise<T> {
    for (let round = 0; round < 2; round++) {
      const existing = await this.client.get(RESOURCES.ingresses, this.namespace, this.#canaryIngress);
      if (existing) {
        return updateObject(
          this.client,
          RESOURCES.ingresses,
          this.namespace,
          this.#canaryIngress,
          (canary): Decision<T> => {
            const decision = decide(canary);
            if ("skip" in decision) return decision;
            const annotations = record(canary.metadata as Record<string, unknown>, "annotations") as Record<
              string,
              string
            >;
            let changed = false;
            for (const [key, value] of Object.entries(decision.annotations)) {
              if (annotations[key] === value) continue;
              if (value === undefined) delete annotations[key];
              else annotations[key] = value;
              changed = true;
            }
            return changed
              ? { write: canary, result: decision.result }
              : { skip: true, result: decision.result };
          },
        );
      }
      const decision = decide(undefined);
      if ("skip" in decision) return decision.result;
      const stable = await this.client.require(
        RESOURCES.ingresses,
        this.namespace,
        this.settings.stableIngress,
      );
      try {
        await this.client.create(RESOURCES.ingresses, this.#canaryFrom(stable, decision.annotations));
        return decision.result;
      } catch (error) {
        if (!(error instanceof KubeConflictError)) throw error;
      }
    }
    throw new KubeConflictError(`${this.what} was created and changed concurrently; the workflow retries`);
  }

  #canaryFrom(stable: KubeObject, annotations: Record<string, string | undefined>): KubeObject {
    const spec = structuredClone(stable.spec ?? {});
    let backends = 0;
    const swap = (backend: Record<string, unknown> | undefined) => {
      const service = backend ? record(backend, "service") : undefined;
      if (service && service.name === this.settings.stableService) {
        service.name = this.settings.canaryService;
        backends++;
      }
    };
    swap(spec.defaultBackend as Record<string, unknown> | undefined);
    for (const rule of records(spec, "rules")) {
      for (const path of records(record(rule, "http"), "paths")) swap(record(path, "backend"));
    }
    if (backends === 0) {
      throw new TargetConfigurationError(
        `Ingress ${this.namespace}/${this.settings.stableIngress} has no backend to Service ${this.settings.stableService}`,
      );
    }
    const kept = Object.fromEntries(Object.entries(annotations).filter(([, v]) => v !== undefined)) as Record<
      string,
      string
    >;
    return {
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
      metadata: {
        name: this.#canaryIngress,
        namespace: this.namespace,
        labels: { "app.kubernetes.io/managed-by": "sfn-rollouts" },
        annotations: {
          ...Object.fromEntries(
            Object.entries(stable.metadata.annotations ?? {}).filter(
              ([k]) => k.startsWith(`${this.settings.annotationPrefix}/`) && !k.includes("/canary"),
            ),
          ),
          [this.#key("canary")]: "true",
          [this.#key("canary-weight")]: "0",
          ...kept,
        },
      },
      spec,
    };
  }
}
