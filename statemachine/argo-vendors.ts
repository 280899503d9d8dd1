import type { z } from "zod";
import type {
  ArgoDatadogSchema,
  ArgoGraphiteSchema,
  ArgoInfluxdbSchema,
  ArgoKayentaSchema,
  ArgoNewRelicSchema,
  ArgoWavefrontSchema,
} from "./argo-schema.ts";
import { parseDuration } from "./duration.ts";
import { MAX_PROVIDER_TIMEOUT_SECONDS } from "./limits.ts";
import {
  type DatadogProviderSchema,
  type GraphiteProviderSchema,
  HTTP_URL,
  type InfluxdbProviderSchema,
  type KayentaProviderSchema,
  type NewRelicProviderSchema,
  type WavefrontProviderSchema,
} from "./providers.ts";

/**
 * Argo's `datadog` and `newRelic` providers as the normalized spec holds them, with the checks
 * Argo makes when it builds the provider (`validateIncomingProps` in
 * `metricproviders/datadog/datadog.go`, the timeout of `metricproviders/newrelic/newrelic.go`)
 * made when the template is loaded, with Argo's messages.
 *
 * Where Argo reads the keys from a Kubernetes Secret, the controller reads them from a Secrets
 * Manager secret: the provider's own, or the one it is given under the name a template's
 * `secretRef.name` or `profile` gives (`metricSecrets.named`). Argo's default names (`datadog`,
 * `newrelic`) are the provider's own secret.
 */

type Report = (field: string, message: string) => void;

/** Argo's Kubernetes Secret names, which the controller's one secret per provider stands for. */
export const ARGO_SECRET_NAMES = { datadog: "datadog", newRelic: "newrelic", influxdb: "influxdb" } as const;

/** Argo's checks of a Datadog metric, first failing one's message (Argo reports one). */
export function datadogProblem(dd: z.infer<typeof ArgoDatadogSchema>): string | undefined {
  const queries = Object.keys(dd.queries ?? {}).length;
  const query = dd.query ?? "";
  const v1 = (dd.apiVersion ?? "v1") === "v1";
  if (query === "" && queries === 0) {
    return "Must have either a query or queries. Please review the Analysis Template.";
  }
  if (query !== "" && queries > 0) {
    return "Cannot have both a query and queries. Please review the Analysis Template.";
  }
  if (v1 && query === "") {
    return "Query is empty. API Version v1 only supports using the query parameter in your Analysis Template.";
  }
  if ((dd.formula ?? "") !== "" && queries === 0) {
    return "Formula are only valid when queries are set. Please review the Analysis Template.";
  }
  if ((dd.formula ?? "") === "" && queries > 1) {
    return "When multiple queries are provided you must include a formula.";
  }
  if (v1 && (dd.aggregator ?? "") !== "") {
    return "Aggregator is not supported in v1. Please review the Analysis Template.";
  }
  return undefined;
}

/** A Datadog metric normalized (durations in seconds), or undefined with every problem reported. */
export function datadogOf(
  dd: z.infer<typeof ArgoDatadogSchema>,
  report: Report,
  at: string,
): z.input<typeof DatadogProviderSchema> | undefined {
  let ok = true;
  const problem = datadogProblem(dd);
  if (problem) {
    report(at, problem);
    ok = false;
  }
  const ref = dd.secretRef;
  const secret = ref?.name ?? "";
  if (ref?.namespaced && secret === "") {
    // Argo's findCredentials: a namespaced secret must be named.
    report(`${at}.secretRef.name`, "secret name is required for namespaced credentials");
    ok = false;
  }
  const interval = dd.interval === undefined || dd.interval === "" ? undefined : parseDuration(dd.interval);
  if (interval && "error" in interval) {
    report(`${at}.interval`, interval.error);
    ok = false;
  }
  const timeout = requestTimeout(dd.requestTimeout, report, `${at}.requestTimeout`);
  if (timeout === "bad" || !ok) return undefined;
  const { secretRef: _ref, interval: _interval, requestTimeout: _timeout, ...rest } = dd;
  return {
    ...rest,
    ...(secret !== "" ? { secret } : {}),
    ...(interval && "seconds" in interval ? { interval: Math.trunc(interval.seconds) } : {}),
    ...(timeout !== undefined ? { requestTimeout: timeout } : {}),
  };
}

/** Argo's `requestTimeout` checks, with its messages; seconds, or "bad" once reported. */
function requestTimeout(value: string | undefined, report: Report, at: string): number | undefined | "bad" {
  if (value === undefined || value === "") return undefined;
  const negative = /^\s*-/.test(value);
  const parsed = parseDuration(negative ? value.replace(/^\s*-/, "") : value);
  if ("error" in parsed) {
    report(at, `Could not parse the request timeout: ${parsed.error}. Please review the Analysis Template.`);
    return "bad";
  }
  if (negative || parsed.seconds <= 0) {
    report(
      at,
      "Request timeout must be a positive duration (e.g. 30s). Please review the Analysis Template.",
    );
    return "bad";
  }
  if (parsed.seconds > MAX_PROVIDER_TIMEOUT_SECONDS) {
    report(
      at,
      `must be at most ${MAX_PROVIDER_TIMEOUT_SECONDS} seconds: a measurement runs inside the analysis function`,
    );
    return "bad";
  }
  return parsed.seconds;
}

/** A New Relic metric normalized, or undefined with every problem reported. */
export function newRelicOf(
  nr: z.infer<typeof ArgoNewRelicSchema>,
  report: Report,
  at: string,
): z.input<typeof NewRelicProviderSchema> | undefined {
  if (nr.timeout !== undefined && nr.timeout < 0) {
    report(`${at}.timeout`, "timeout value needs to be a positive value");
    return undefined;
  }
  const profile = nr.profile ?? "";
  return {
    query: nr.query,
    ...(nr.timeout !== undefined ? { timeout: nr.timeout } : {}),
    ...(profile !== "" && profile !== ARGO_SECRET_NAMES.newRelic ? { profile } : {}),
  };
}

/**
 * A Graphite metric normalized, or undefined with its problem reported. Argo's `NewAPIClient`
 * refuses an address that is empty or does not parse (`Graphite address … is not a valid URL`);
 * here that is said when the template is loaded, and so is a scheme other than http or https,
 * which Go's client could not request either.
 */
export function graphiteOf(
  g: z.infer<typeof ArgoGraphiteSchema>,
  report: Report,
  at: string,
): z.input<typeof GraphiteProviderSchema> | undefined {
  const address = g.address ?? "";
  if (!HTTP_URL.test(address)) {
    report(
      `${at}.address`,
      `Graphite address ${address} is not a valid URL (an http:// or https:// address is needed)`,
    );
    return undefined;
  }
  return { address, ...(g.query !== undefined ? { query: g.query } : {}) };
}

/**
 * An InfluxDB metric normalized: Argo's default `profile` (`influxdb`, or none) is the controller's
 * InfluxDB secret, any other names one of `metricSecrets.named`.
 */
export function influxdbOf(i: z.infer<typeof ArgoInfluxdbSchema>): z.input<typeof InfluxdbProviderSchema> {
  const profile = i.profile ?? "";
  return {
    query: i.query ?? "",
    ...(profile !== "" && profile !== ARGO_SECRET_NAMES.influxdb ? { profile } : {}),
  };
}

/**
 * A Wavefront metric normalized, or undefined with its problem reported. Argo's client reads
 * `https://{address}/api/v2/`, so the address is a host (and port), never a URL; with none, Argo
 * finds no token for it (`API token not found`), which is said here when the template is loaded.
 */
export function wavefrontOf(
  w: z.infer<typeof ArgoWavefrontSchema>,
  report: Report,
  at: string,
): z.input<typeof WavefrontProviderSchema> | undefined {
  const address = w.address ?? "";
  if (address === "") {
    report(
      `${at}.address`,
      "the Wavefront address is needed (example.wavefront.com): its API token is found by it",
    );
    return undefined;
  }
  if (!/^[^\s/?#@]+$/.test(address)) {
    report(
      `${at}.address`,
      `the Wavefront address ${JSON.stringify(address)} must be a host (example.wavefront.com), without a scheme or a path: it is read as https://{address}/api/v2/`,
    );
    return undefined;
  }
  return { address, ...(w.query !== undefined ? { query: w.query } : {}) };
}

/**
 * A Kayenta metric normalized, or undefined with its problem reported: the address must be an
 * http:// or https:// URL (Argo's client could request nothing else), and a scope's two starts,
 * and its two ends, must both be set or both be empty (Argo's measurement errors say so; here the
 * template is refused when it is loaded, with Argo's words).
 */
export function kayentaOf(
  k: z.infer<typeof ArgoKayentaSchema>,
  report: Report,
  at: string,
): z.input<typeof KayentaProviderSchema> | undefined {
  const address = k.address ?? "";
  let ok = true;
  if (!HTTP_URL.test(address)) {
    report(`${at}.address`, `Kayenta address ${JSON.stringify(address)} is not an http:// or https:// URL`);
    ok = false;
  }
  for (const [i, scope] of (k.scopes ?? []).entries()) {
    for (const edge of ["start", "end"] as const) {
      if (!scope.controlScope?.[edge] !== !scope.experimentScope?.[edge]) {
        report(
          `${at}.scopes[${i}]`,
          `controlScope.${edge} and experimentScope.${edge} must both be set or be empty`,
        );
        ok = false;
      }
    }
  }
  return ok ? { ...k, address } : undefined;
}
