import { TargetConfigurationError } from "../errors.ts";
import type { HeaderRoute } from "../port.ts";
import { type KubeClient, type KubeObject, RESOURCES } from "./client.ts";
import { type Decision, percent, record, records, updateObject } from "./objects.ts";
import { prefixRegex, sameShare, splitWeights, type WeightRouter, type WeightWrite } from "./router.ts";

/**
 * Gateway API: the rules of an HTTPRoute whose `backendRefs` name the stable Service get exact
 * weights (`weight` of each backendRef: canary `n`, stable `100 − n`; a missing canary backendRef
 * is added with the stable one's port). A header route is a rule of its own, named after the
 * route, that matches the headers (with the weighted rule's path matches) and sends to the canary.
 */
export class GatewayApiRouter implements WeightRouter {
  readonly what: string;

  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    private readonly settings: { httpRoute: string; stableService: string; canaryService: string },
  ) {
    this.what = `HTTPRoute ${namespace}/${settings.httpRoute}`;
  }

  async read(): Promise<{ canary: number; shares: number[]; detail: string }> {
    return this.#observe(
      await this.client.require(RESOURCES.httpRoutes, this.namespace, this.settings.httpRoute),
    );
  }

  write(target: number, expected: number | undefined): Promise<WeightWrite> {
    return this.#update((route): Decision<WeightWrite> => {
      const seen = this.#observe(route);
      const off = expected === undefined ? undefined : seen.shares.find((s) => !sameShare(s, expected));
      if (off !== undefined) {
        return { skip: true, result: { outcome: "drift", canary: off, detail: seen.detail } };
      }
      let changed = false;
      for (const rule of this.#weighted(route)) {
        const refs = records(rule, "backendRefs");
        const stable = refs.find((r) => this.#is(r, this.settings.stableService));
        let canary = refs.find((r) => this.#is(r, this.settings.canaryService));
        if (!canary) {
          canary = {
            name: this.settings.canaryService,
            ...(stable?.port === undefined ? {} : { port: stable.port }),
          };
          rule.backendRefs = [...refs, canary];
          changed = true;
        }
        changed = splitWeights(stable, canary, target) || changed;
      }
      const detail = `${this.what}: ${this.settings.canaryService} ${target}, ${this.settings.stableService} ${100 - target}`;
      return changed
        ? { write: route, result: { outcome: "applied", detail } }
        : { skip: true, result: { outcome: "applied", detail } };
    });
  }

  setHeaderRoute(route: HeaderRoute): Promise<string> {
    const headers = route.match.map((m) => {
      const v = m.headerValue;
      if (v.exact !== undefined) return { type: "Exact", name: m.headerName, value: v.exact };
      if (v.regex !== undefined) return { type: "RegularExpression", name: m.headerName, value: v.regex };
      if (v.prefix !== undefined)
        return { type: "RegularExpression", name: m.headerName, value: prefixRegex(v.prefix) };
      throw new TargetConfigurationError(
        `header route ${route.name}: ${m.headerName} has no exact, prefix or regex value`,
      );
    });
    return this.#update((object): Decision<string> => {
      const rules = records(object.spec, "rules");
      const weighted = this.#weighted(object)[0];
      if (!weighted) throw this.#noRule();
      const port = records(weighted, "backendRefs").find((r) =>
        this.#is(r, this.settings.stableService),
      )?.port;
      const paths = records(weighted, "matches").filter((m) => m.path !== undefined);
      const matches = (paths.length > 0 ? paths : [{}]).map((m) => ({ ...m, headers }));
      const rule = {
        name: route.name,
        matches,
        backendRefs: [
          { name: this.settings.canaryService, ...(port === undefined ? {} : { port }), weight: 1 },
        ],
      };
      const at = rules.findIndex((r) => r.name === route.name);
      const message = `${this.what}: rule ${route.name} sends requests matching ${describe(route)} to ${this.settings.canaryService}`;
      if (at >= 0 && JSON.stringify(rules[at]) === JSON.stringify(rule))
        return { skip: true, result: message };
      // A more specific match (headers) wins over the weighted rule whatever the order, by the
      // Gateway API's precedence; it goes first anyway, for people reading the route.
      record(object, "spec").rules = at >= 0 ? rules.map((r, i) => (i === at ? rule : r)) : [rule, ...rules];
      return { write: object, result: message };
    });
  }

  removeHeaderRoute(name: string): Promise<string> {
    return this.#update((object): Decision<string> => {
      const rules = records(object.spec, "rules");
      const kept = rules.filter((r) => r.name !== name);
      if (kept.length === rules.length) return { skip: true, result: `${this.what}: no rule ${name}` };
      record(object, "spec").rules = kept;
      return { write: object, result: `${this.what}: rule ${name} removed` };
    });
  }

  #update<T>(decide: (object: KubeObject) => Decision<T>): Promise<T> {
    return updateObject(this.client, RESOURCES.httpRoutes, this.namespace, this.settings.httpRoute, decide);
  }

  /** The rules splitting traffic: those with a backendRef to the stable Service. */
  #weighted(route: KubeObject): Record<string, unknown>[] {
    const rules = records(route.spec, "rules").filter((rule) =>
      records(rule, "backendRefs").some((r) => this.#is(r, this.settings.stableService)),
    );
    if (rules.length === 0) throw this.#noRule();
    return rules;
  }

  #noRule(): TargetConfigurationError {
    return new TargetConfigurationError(
      `${this.what} has no rule with a backendRef to Service ${this.settings.stableService}`,
    );
  }

  #is(ref: Record<string, unknown>, service: string): boolean {
    return (
      ref.name === service &&
      (ref.kind === undefined || ref.kind === "Service") &&
      (ref.group === undefined || ref.group === "")
    );
  }

  #observe(route: KubeObject): { canary: number; shares: number[]; detail: string } {
    const shares: number[] = [];
    for (const rule of this.#weighted(route)) {
      const refs = records(rule, "backendRefs");
      // A backendRef's weight defaults to 1.
      const weight = (r: Record<string, unknown> | undefined) =>
        r === undefined ? 0 : typeof r.weight === "number" ? r.weight : 1;
      const c = weight(refs.find((r) => this.#is(r, this.settings.canaryService)));
      const total = refs.reduce((sum, r) => sum + weight(r), 0);
      const share = total > 0 ? (c * 100) / total : 0;
      shares.push(share);
    }
    return {
      canary: shares[0] ?? 0,
      shares,
      detail: `${this.what}: ${this.settings.canaryService} gets ${shares.map(percent).join(", ")} of the weighted rule${shares.length === 1 ? "" : "s"}`,
    };
  }
}

function describe(route: HeaderRoute): string {
  return route.match
    .map(
      (m) =>
        `${m.headerName} ${m.headerValue.exact !== undefined ? `= ${m.headerValue.exact}` : m.headerValue.prefix !== undefined ? `starting with ${m.headerValue.prefix}` : `~ ${m.headerValue.regex}`}`,
    )
    .join(" and ");
}
