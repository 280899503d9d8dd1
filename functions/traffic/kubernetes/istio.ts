import { TargetConfigurationError } from "../errors.ts";
import type { HeaderRoute } from "../port.ts";
import { type KubeClient, type KubeObject, RESOURCES } from "./client.ts";
import { type Decision, percent, record, records, updateObject } from "./objects.ts";
import { sameShare, splitWeights, type WeightRouter, type WeightWrite } from "./router.ts";

/**
 * Istio: the HTTP routes of a VirtualService (the named ones, or every one with a destination
 * to the stable host) get exact destination weights (canary `n`, stable `100 − n`; a missing
 * canary destination is added as a copy of the stable one with the canary host). A header route
 * is an HTTP route of its own, named after the route and placed first (Istio takes the first
 * match), whose one match holds every header condition.
 */
export class IstioRouter implements WeightRouter {
  readonly what: string;

  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    private readonly settings: {
      virtualService: string;
      stableService: string;
      canaryService: string;
      routes?: string[] | undefined;
    },
  ) {
    this.what = `VirtualService ${namespace}/${settings.virtualService}`;
  }

  async read(): Promise<{ canary: number; shares: number[]; detail: string }> {
    return this.#observe(
      await this.client.require(RESOURCES.virtualServices, this.namespace, this.settings.virtualService),
    );
  }

  write(target: number, expected: number | undefined): Promise<WeightWrite> {
    return this.#update((vs): Decision<WeightWrite> => {
      const seen = this.#observe(vs);
      const off = expected === undefined ? undefined : seen.shares.find((s) => !sameShare(s, expected));
      if (off !== undefined)
        return { skip: true, result: { outcome: "drift", canary: off, detail: seen.detail } };
      let changed = false;
      for (const http of this.#weighted(vs)) {
        const routes = records(http, "route");
        const stable = routes.find((r) => this.#host(r) === this.settings.stableService);
        let canary = routes.find((r) => this.#host(r) === this.settings.canaryService);
        if (!canary) {
          const destination = { ...record(stable ?? {}, "destination"), host: this.settings.canaryService };
          canary = { destination };
          http.route = [...routes, canary];
          changed = true;
        }
        changed = splitWeights(stable, canary, target) || changed;
      }
      const detail = `${this.what}: ${this.settings.canaryService} ${target}, ${this.settings.stableService} ${100 - target}`;
      return changed
        ? { write: vs, result: { outcome: "applied", detail } }
        : { skip: true, result: { outcome: "applied", detail } };
    });
  }

  setHeaderRoute(route: HeaderRoute): Promise<string> {
    const headers = Object.fromEntries(
      route.match.map((m) => {
        const v = m.headerValue;
        const match =
          v.exact !== undefined
            ? { exact: v.exact }
            : v.prefix !== undefined
              ? { prefix: v.prefix }
              : v.regex !== undefined
                ? { regex: v.regex }
                : undefined;
        if (!match)
          throw new TargetConfigurationError(
            `header route ${route.name}: ${m.headerName} has no exact, prefix or regex value`,
          );
        // Istio matches header names in lower case.
        return [m.headerName.toLowerCase(), match];
      }),
    );
    return this.#update((vs): Decision<string> => {
      const https = records(vs.spec, "http");
      const weighted = this.#weighted(vs)[0];
      const stable = records(weighted, "route").find((r) => this.#host(r) === this.settings.stableService);
      const uris = records(weighted, "match").filter((m) => m.uri !== undefined);
      const http = {
        name: route.name,
        match: (uris.length > 0 ? uris : [{}]).map((m) => ({ ...m, headers })),
        route: [
          {
            destination: { ...record(stable ?? {}, "destination"), host: this.settings.canaryService },
            weight: 100,
          },
        ],
      };
      const message = `${this.what}: route ${route.name} sends requests with ${Object.keys(headers).join(", ")} matching to ${this.settings.canaryService}`;
      const at = https.findIndex((h) => h.name === route.name);
      if (at >= 0 && JSON.stringify(https[at]) === JSON.stringify(http))
        return { skip: true, result: message };
      record(vs, "spec").http = at >= 0 ? https.map((h, i) => (i === at ? http : h)) : [http, ...https];
      return { write: vs, result: message };
    });
  }

  removeHeaderRoute(name: string): Promise<string> {
    return this.#update((vs): Decision<string> => {
      const https = records(vs.spec, "http");
      const kept = https.filter((h) => h.name !== name);
      if (kept.length === https.length) return { skip: true, result: `${this.what}: no route ${name}` };
      record(vs, "spec").http = kept;
      return { write: vs, result: `${this.what}: route ${name} removed` };
    });
  }

  #update<T>(decide: (object: KubeObject) => Decision<T>): Promise<T> {
    return updateObject(
      this.client,
      RESOURCES.virtualServices,
      this.namespace,
      this.settings.virtualService,
      decide,
    );
  }

  #host(route: Record<string, unknown>): unknown {
    return record(route, "destination").host;
  }

  /** The HTTP routes to split: the named ones, or those with a destination to the stable host. */
  #weighted(vs: KubeObject): Record<string, unknown>[] {
    const https = records(vs.spec, "http");
    const names = this.settings.routes;
    if (names) {
      const missing = names.filter((n) => !https.some((h) => h.name === n));
      if (missing.length > 0)
        throw new TargetConfigurationError(`${this.what} has no HTTP route named ${missing.join(", ")}`);
      return https.filter((h) => names.includes(String(h.name)));
    }
    const found = https.filter((h) =>
      records(h, "route").some((r) => this.#host(r) === this.settings.stableService),
    );
    if (found.length === 0) {
      throw new TargetConfigurationError(
        `${this.what} has no HTTP route with a destination to ${this.settings.stableService}`,
      );
    }
    return found;
  }

  #observe(vs: KubeObject): { canary: number; shares: number[]; detail: string } {
    const shares = this.#weighted(vs).map((http) => {
      const routes = records(http, "route");
      // One destination without a weight takes everything; weights otherwise sum to 100.
      const weight = (r: Record<string, unknown> | undefined) =>
        r === undefined ? 0 : typeof r.weight === "number" ? r.weight : routes.length === 1 ? 100 : 0;
      const total = routes.reduce((sum, r) => sum + weight(r), 0);
      const c = weight(routes.find((r) => this.#host(r) === this.settings.canaryService));
      return total > 0 ? (c * 100) / total : 0;
    });
    return {
      canary: shares[0] ?? 0,
      shares,
      detail: `${this.what}: ${this.settings.canaryService} gets ${shares.map(percent).join(", ")} of the weighted route${shares.length === 1 ? "" : "s"}`,
    };
  }
}
