import type { DatadogProvider, Metric } from "../../statemachine/spec.ts";
import { datadogStatusProblem, readV1, readV2 } from "./datadog-response.ts";
import {
  DEFAULT_MAX_BODY_BYTES,
  deadline,
  describeFetchError,
  type Fetch,
  type HttpOptions,
  readBody,
  schemeProblem,
} from "./http.ts";
import type { MeasureContext, MetricProvider, ProviderResult } from "./port.ts";
import { type ProfileSecretOptions, secretIdFor } from "./secrets.ts";

/**
 * The Datadog provider, as Argo's `metricproviders/datadog/datadog.go` queries and reads:
 * `apiVersion: v1` is a GET of `/api/v1/query` over `[now - interval, now]` in seconds; `v2` a
 * POST of a `scalar_request` to `/api/v2/query/scalar` (milliseconds, each query with the
 * `aggregator`, `last` by default, and the `formula`). The keys travel as `DD-API-KEY` and
 * `DD-APPLICATION-KEY`; the address is the secret's `address`, `https://api.datadoghq.com` without.
 *
 * Where the keys come from, in Argo's order: the environment's `DD_API_KEY`, `DD_APP_KEY` and
 * `DD_ADDRESS` when all three are set, else the controller's Datadog secret in Secrets Manager
 * (the JSON of Argo's `datadog` Kubernetes Secret: `api-key`, `app-key`, `address`). A
 * `secretRef.name` reads only the controller's secret of that name (`metricSecrets.named`).
 *
 * One difference: a redirect is not followed (it would carry the keys elsewhere); it is an Error
 * measurement with its status.
 */
export class DatadogMetricProvider implements MetricProvider {
  private readonly fetch: Fetch;
  private readonly maxBodyBytes: number;

  constructor(
    private readonly options: HttpOptions &
      ProfileSecretOptions & {
        /** Where `DD_API_KEY`, `DD_APP_KEY`, `DD_ADDRESS` are looked up; default `process.env`. */
        env?: Record<string, string | undefined>;
      } = {},
  ) {
    this.fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  async measure(metric: Metric, ctx: MeasureContext): Promise<ProviderResult> {
    const dd = metric.provider.datadog;
    if (!dd) return { ok: false, message: `metric "${metric.name}" has no datadog provider` };
    const keys = await this.credentials(dd.secret, ctx);
    if ("error" in keys) return { ok: false, message: keys.error };
    const url = endpointUrl(keys.address, dd.apiVersion);
    if ("error" in url) return { ok: false, message: url.error };
    const now = Math.floor(ctx.now.getTime() / 1000);
    const request = buildRequest(dd, url.url, now);
    const headers = {
      "Content-Type": "application/json",
      "DD-API-KEY": keys.apiKey,
      "DD-APPLICATION-KEY": keys.appKey,
    };
    let status: number;
    let body: string;
    try {
      const res = await this.fetch(request.url, {
        method: request.method,
        headers,
        ...(request.body !== undefined ? { body: request.body } : {}),
        redirect: "manual",
        signal: deadline(dd.requestTimeout, ctx.signal),
      });
      status = res.status;
      const read = await readBody(res, this.maxBodyBytes);
      if ("error" in read) return { ok: false, message: read.error };
      body = read.text;
    } catch (e) {
      return { ok: false, message: describeFetchError(request.method, request.url, e, dd.requestTimeout) };
    }
    const problem = datadogStatusProblem(status, body);
    if (problem) return { ok: false, message: problem };
    return dd.apiVersion === "v1" ? readV1(body) : readV2(body);
  }

  /**
   * Argo's `findCredentials`: a `secretRef` names the only secret read; without one, the
   * environment when all three are set, else the controller's Datadog secret.
   */
  private async credentials(
    name: string | undefined,
    ctx: MeasureContext,
  ): Promise<{ address: string; apiKey: string; appKey: string } | { error: string }> {
    const env = this.options.env ?? process.env;
    const [apiKey, appKey, address] = [env.DD_API_KEY, env.DD_APP_KEY, env.DD_ADDRESS];
    const fromEnv = apiKey !== undefined && appKey !== undefined && address !== undefined;
    if (name === undefined && fromEnv && apiKey !== "" && appKey !== "") return { address, apiKey, appKey };
    const missing = "failed to find the credentials for datadog metrics provider";
    const secretId = secretIdFor({ own: this.options.secretId, named: this.options.named }, name, "datadog");
    if (!secretId || !this.options.secrets) {
      return {
        error:
          name === undefined
            ? `${missing}: the controller has no Datadog secret (RolloutController's metricSecrets.datadog; ROLLOUTS_DATADOG_SECRET for rollouts analyze), and DD_API_KEY, DD_APP_KEY and DD_ADDRESS are not all set`
            : `${missing}: the controller has no secret named "${name}" (RolloutController's metricSecrets.named)`,
      };
    }
    const secret = await this.options.secrets.read(secretId, ctx.now, ctx.signal);
    if ("error" in secret) return { error: `${missing}: ${secret.error}` };
    const v = secret.values;
    if (!v["api-key"] || !v["app-key"]) {
      return { error: `${missing}: secret ${secretId} needs the keys "api-key" and "app-key"` };
    }
    return { address: v.address ?? "", apiKey: v["api-key"], appKey: v["app-key"] };
  }
}

/** Argo's `buildEndpointUrl`: the address (Datadog's US site by default) and the version's route. */
function endpointUrl(address: string, apiVersion: "v1" | "v2"): { url: string } | { error: string } {
  const base = address === "" ? "https://api.datadoghq.com" : address;
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(base))
    return { error: `parse ${JSON.stringify(base)}: missing protocol scheme` };
  const refused = schemeProblem(base);
  if (refused) return { error: refused };
  return { url: base + (apiVersion === "v2" ? "/api/v2/query/scalar" : "/api/v1/query") };
}

/** Argo's `createRequestV1` / `createRequestV2`. */
function buildRequest(
  dd: DatadogProvider,
  url: string,
  now: number,
): { method: "GET" | "POST"; url: string; body?: string } {
  if (dd.apiVersion === "v1") {
    const u = new URL(url);
    // url.Values.Encode sorts the keys.
    u.searchParams.set("from", String(now - dd.interval));
    u.searchParams.set("query", dd.query ?? "");
    u.searchParams.set("to", String(now));
    u.searchParams.sort();
    return { method: "GET", url: u.toString() };
  }
  const queries = dd.query !== undefined && dd.query !== "" ? { query: dd.query } : (dd.queries ?? {});
  const aggregator = dd.aggregator ?? "last";
  const body = {
    data: {
      attributes: {
        from: (now - dd.interval) * 1000,
        to: now * 1000,
        queries: Object.keys(queries)
          .sort()
          .map((name) => ({ aggregator, data_source: "metrics", name, query: queries[name] })),
        formulas: dd.formula ? [{ formula: dd.formula }] : [],
      },
      type: "scalar_request",
    },
  };
  return { method: "POST", url, body: JSON.stringify(body) };
}
