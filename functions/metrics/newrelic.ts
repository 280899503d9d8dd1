import type { Metric } from "../../statemachine/spec.ts";
import { goMarshal, goParse, isObject } from "./go-json.ts";
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
import { type ProfileSecretOptions, readProfileSecret } from "./secrets.ts";

/**
 * The New Relic provider, as Argo's `metricproviders/newrelic/newrelic.go` queries through
 * newrelic-client-go: one NerdGraph (GraphQL) POST of `actor.account(id).nrql(query, timeout)`
 * with the personal API key in `Api-Key`. One result is `result` as a map
 * (`result.successRate`, `result['average.duration']`), several are a list of maps; no result, or
 * one empty map, is an Error (`no results returned from NRQL query`). The value prints as Go
 * prints the map (keys sorted). `metadata.ResolvedNewRelicQuery` is the query as sent.
 *
 * The account comes from the controller's New Relic secret in Secrets Manager, the JSON of Argo's
 * `newrelic` Kubernetes Secret: `personal-api-key`, `account-id`, `region` (`us` by default; `eu`,
 * `jp`, `gov`; any other is `us`, as the client does) and `base-url-nerdgraph` (a proxy). A
 * `profile` reads the controller's secret of that name instead (`metricSecrets.named`).
 *
 * One difference: newrelic-client-go retries a NerdGraph timeout or server error up to three times
 * within the measurement; here the measurement is an Error at once and the analysis measures
 * again 10 s later, as after any Error.
 */
export class NewRelicMetricProvider implements MetricProvider {
  private readonly fetch: Fetch;
  private readonly maxBodyBytes: number;

  constructor(private readonly options: HttpOptions & ProfileSecretOptions = {}) {
    this.fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  async measure(metric: Metric, ctx: MeasureContext): Promise<ProviderResult> {
    const nr = metric.provider.newRelic;
    if (!nr) return { ok: false, message: `metric "${metric.name}" has no newRelic provider` };
    const metadata = { ResolvedNewRelicQuery: nr.query };
    const account = await this.account(nr.profile, ctx);
    if ("error" in account) return { ok: false, message: account.error, metadata };
    const answer = await this.post(account, { query: nr.query, timeout: nr.timeout }, ctx);
    if ("error" in answer) return { ok: false, message: answer.error, metadata };
    return { ...processResults(answer.results), metadata };
  }

  /** Argo's `NewNewRelicAPIClient`: the profile's secret (the `newrelic` one by default). */
  private async account(
    profile: string | undefined,
    ctx: MeasureContext,
  ): Promise<NerdGraphAccount | { error: string }> {
    const secret = await readProfileSecret(
      this.options,
      profile,
      "newrelic",
      "account ID or personal API key not found: the controller has no New Relic secret (RolloutController's metricSecrets.newRelic; ROLLOUTS_NEWRELIC_SECRET for rollouts analyze)",
      ctx,
    );
    if ("error" in secret) return secret;
    const v = secret.values;
    const apiKey = v["personal-api-key"] ?? "";
    const accountId = v["account-id"] ?? "";
    if (apiKey === "" || accountId === "") return { error: "account ID or personal API key not found" };
    if (!/^[+-]?\d+$/.test(accountId) || !Number.isSafeInteger(Number(accountId))) {
      return {
        error: `could not parse account ID: strconv.Atoi: parsing ${JSON.stringify(accountId)}: invalid syntax`,
      };
    }
    return { apiKey, accountId: Number(accountId), url: v["base-url-nerdgraph"] ?? nerdGraphUrl(v.region) };
  }

  /** newrelic-client-go's `NerdGraphQuery`: its status and GraphQL error handling. */
  private async post(
    account: NerdGraphAccount,
    nrql: { query: string; timeout: number },
    ctx: MeasureContext,
  ): Promise<{ results: unknown[] } | { error: string }> {
    const refused = schemeProblem(account.url);
    if (refused) return { error: refused };
    const body = JSON.stringify({
      query: NRQL_QUERY,
      variables: { accountId: account.accountId, query: nrql.query, timeout: nrql.timeout },
    });
    let status: number;
    let text: string;
    // The client's own HTTP timeout is 30 s; within the analysis function's time it is the NRQL
    // timeout and a margin for the round trip.
    const seconds = Math.min(30, nrql.timeout + 10);
    try {
      const res = await this.fetch(account.url, {
        method: "POST",
        headers: { "Content-Type": "application/json", "Api-Key": account.apiKey, "User-Agent": USER_AGENT },
        body,
        redirect: "manual",
        signal: deadline(seconds, ctx.signal),
      });
      status = res.status;
      const read = await readBody(res, this.maxBodyBytes);
      if ("error" in read) return read;
      text = read.text;
    } catch (e) {
      return { error: describeFetchError("POST", account.url, e, seconds) };
    }
    return nerdGraphResults(status, text);
  }
}

interface NerdGraphAccount {
  apiKey: string;
  accountId: number;
  url: string;
}

const USER_AGENT = "sfn-rollouts (newrelic provider)";

/** The NRQL query Argo sends (`gqlNrqlQuery`). */
export const NRQL_QUERY = `query (
  $query: Nrql!, 
  $accountId: Int!,
  $timeout: Seconds!
)
{
  actor {
    account(id: $accountId) {
      nrql(query: $query, timeout: $timeout) {
        results
      }
    }
  }
}
`;

/** NerdGraph's URL per region, as newrelic-client-go's `region` package has them; any other region is US. */
export function nerdGraphUrl(region: string | undefined): string {
  switch ((region ?? "us").toLowerCase()) {
    case "eu":
      return "https://api.eu.newrelic.com/graphql";
    case "jp":
      return "https://api.jp.newrelic.com/graphql";
    case "gov":
    case "fedramp":
      return "https://gov-api.newrelic.com/graphql";
    default:
      return "https://api.newrelic.com/graphql";
  }
}

/** The client's reading of an answer: its status, its GraphQL `errors`, then `data`. */
export function nerdGraphResults(status: number, text: string): { results: unknown[] } | { error: string } {
  if (status === 404) return { error: "resource not found" };
  const parsed = goParse(text);
  const root = "value" in parsed && isObject(parsed.value) ? parsed.value : {};
  const errors = Array.isArray(root.errors) ? root.errors.filter(isObject) : [];
  const messages = errors.map((e) => e.message).filter((m): m is string => typeof m === "string" && m !== "");
  const badKey = errors.some((e) => isObject(e.extensions) && e.extensions.error_code === "BAD_API_KEY");
  if (status === 402) return { error: "Payment Required" };
  if (status < 200 || status > 299) {
    if (errors.length > 0 && (status === 401 || badKey)) {
      return {
        error:
          "401 response returned: Invalid credentials provided. Missing API key or an invalid API key was provided.",
      };
    }
    return { error: `${status} response returned${messages.length > 0 ? `: ${messages.join(", ")}` : ""}` };
  }
  const deprecated = messages.some((m) => m.startsWith("This field is deprecated!"));
  if (!deprecated && messages.length > 0) return { error: messages.join(", ") };
  if ("error" in parsed) return { error: parsed.error };
  const data = root.data;
  const results = isObject(data) ? pathOf(data, ["actor", "account", "nrql", "results"]) : undefined;
  return { results: Array.isArray(results) ? results : [] };
}

function pathOf(value: unknown, path: string[]): unknown {
  let node = value;
  for (const key of path) node = isObject(node) ? node[key] : undefined;
  return node;
}

/** Argo's `processResponse`: one result is a map, several a list; none, or an empty map, is an Error. */
export function processResults(results: unknown[]): ProviderResult {
  const none = { ok: false as const, message: "no results returned from NRQL query" };
  if (results.length === 0) return none;
  if (results.length === 1) {
    const result = results[0];
    if (!isObject(result) || Object.keys(result).length === 0) return none;
    return { ok: true, result, value: goMarshal(result) };
  }
  return { ok: true, result: results, value: goMarshal(results) };
}
