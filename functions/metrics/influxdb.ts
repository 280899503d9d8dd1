import { STATUS_CODES } from "node:http";
import type { Metric } from "../../statemachine/spec.ts";
import { goParse, isObject } from "./go-json.ts";
import { queryEscape } from "./go-url.ts";
import {
  DEFAULT_MAX_BODY_BYTES,
  deadline,
  describeFetchError,
  type Fetch,
  type HttpOptions,
  readBody,
  schemeProblem,
} from "./http.ts";
import { fluxValues } from "./influxdb-csv.ts";
import type { MeasureContext, MetricProvider, ProviderResult } from "./port.ts";
import { type ProfileSecretOptions, readProfileSecret } from "./secrets.ts";

/**
 * The InfluxDB provider, as Argo's `metricproviders/influxdb/influxdb.go` queries through
 * influxdb-client-go: one POST of the Flux query to `{address}/api/v2/query?org={org}` with
 * `Authorization: Token {authToken}`, the body `{"query", "type": "flux", "dialect"}` asking for
 * annotated CSV, read within 30 s.
 *
 * `result` is the list of every record's `_value` (a `[]interface {}`: `result[0] == 1`), printed
 * as Go's `fmt.Sprint` prints it: `[1 6.6]`. No record is an Error
 * (`no results returned from flux query`). As in Argo, the records end at the first row the client
 * cannot read (a Flux error table included): the records before it are the result.
 *
 * The server and its token come from the controller's InfluxDB secret in Secrets Manager, the JSON
 * of Argo's `influxdb` Kubernetes Secret (`address`, `authToken`, `org`); a `profile` reads the
 * controller's secret of that name (`metricSecrets.named`).
 */
export class InfluxdbMetricProvider implements MetricProvider {
  private readonly fetch: Fetch;
  private readonly maxBodyBytes: number;

  constructor(private readonly options: HttpOptions & ProfileSecretOptions = {}) {
    this.fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  async measure(metric: Metric, ctx: MeasureContext): Promise<ProviderResult> {
    const influx = metric.provider.influxdb;
    if (!influx) return { ok: false, message: `metric "${metric.name}" has no influxdb provider` };
    const account = await this.account(influx.profile, ctx);
    if ("error" in account) return { ok: false, message: account.error };
    const url = queryUrl(account.address, account.org);
    if ("error" in url) return { ok: false, message: url.error };
    let res: Response;
    let text: string;
    try {
      res = await this.fetch(url.url, {
        method: "POST",
        headers: {
          Authorization: `Token ${account.authToken}`,
          "Content-Type": "application/json",
          "Accept-Encoding": "gzip",
          "User-Agent": USER_AGENT,
        },
        body: JSON.stringify({ query: influx.query, type: "flux", dialect: DIALECT }),
        redirect: "manual",
        signal: deadline(INFLUXDB_TIMEOUT_SECONDS, ctx.signal),
      });
      const read = await readBody(res, this.maxBodyBytes);
      if ("error" in read) return { ok: false, message: read.error };
      text = read.text;
    } catch (e) {
      return { ok: false, message: describeFetchError("POST", url.url, e, INFLUXDB_TIMEOUT_SECONDS) };
    }
    if (res.status < 200 || res.status >= 300) return { ok: false, message: httpError(res, text) };
    const { values } = fluxValues(text);
    if (values.length === 0) return { ok: false, message: "no results returned from flux query" };
    return {
      ok: true,
      result: values.map((v) => v.value),
      value: `[${values.map((v) => v.printed).join(" ")}]`,
    };
  }

  /** Argo's `NewInfluxdbAPI`: the profile's secret (the `influxdb` one by default), all three keys set. */
  private async account(
    profile: string | undefined,
    ctx: MeasureContext,
  ): Promise<{ address: string; authToken: string; org: string } | { error: string }> {
    const secret = await readProfileSecret(
      this.options,
      profile,
      "influxdb",
      "authToken, org, or address not found: the controller has no InfluxDB secret (RolloutController's metricSecrets.influxdb; ROLLOUTS_INFLUXDB_SECRET for rollouts analyze)",
      ctx,
    );
    if ("error" in secret) return secret;
    const { address = "", authToken = "", org = "" } = secret.values;
    if (address === "" || authToken === "" || org === "")
      return { error: "authToken, org, or address not found" };
    return { address, authToken, org };
  }
}

/** Argo's query timeout. */
export const INFLUXDB_TIMEOUT_SECONDS = 30;

const USER_AGENT = "sfn-rollouts (influxdb provider)";

/** The client's `DefaultDialect`: annotated CSV with a header, comma-delimited. */
export const DIALECT = { annotations: ["datatype", "group", "default"], delimiter: ",", header: true };

/**
 * The client's query URL: `api/v2/` resolved against the address as a relative reference (so
 * `http://host/influx/` reads `http://host/influx/api/v2/query`), `org` as the query.
 */
export function queryUrl(address: string, org: string): { url: string } | { error: string } {
  const refused = schemeProblem(address);
  if (refused) return { error: refused };
  const url = new URL("api/v2/query", address);
  url.search = `org=${queryEscape(org)}`;
  return { url: url.toString() };
}

/** The client's `parseHTTPError`: InfluxDB's JSON `{code, message}`, or the body, or the status. */
export function httpError(res: Response, text: string): string {
  const status = `${res.status} ${res.statusText || (STATUS_CODES[res.status] ?? "")}`.trim();
  const type = (res.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase();
  let code = "";
  let message = "";
  if (type === "application/json") {
    if (text.trim() === "") return "EOF";
    const parsed = goParse(text);
    if ("error" in parsed) return parsed.error;
    if (isObject(parsed.value)) {
      for (const [k, v] of Object.entries(parsed.value)) {
        if (k.toLowerCase() === "code" && typeof v === "string") code = v;
        if (k.toLowerCase() === "message" && typeof v === "string") message = v;
      }
    }
  } else {
    code = status;
    message = text;
  }
  if (code === "" && message === "") {
    if (res.status === 429) return "too many requests: exceeded rate limit";
    if (res.status === 503) return "unavailable: service temporarily unavailable";
    code = status;
    message = res.headers.get("x-influxdb-error") ?? "";
  }
  if (code !== "" && message !== "") return `${code}: ${message}`;
  if (message !== "") return message;
  return `Unexpected status code ${res.status}`;
}
