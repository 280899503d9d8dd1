import { goJSONSyntaxError } from "../../statemachine/expr/json.ts";
import type { KayentaProvider, Metric } from "../../statemachine/spec.ts";
import { goV } from "./go-fmt.ts";
import { fieldTypeError, goField, goJsonKind, isObject } from "./go-json.ts";
import {
  DEFAULT_MAX_BODY_BYTES,
  deadline,
  describeFetchError,
  type Fetch,
  type HttpOptions,
  readBody,
} from "./http.ts";
import type {
  MeasureContext,
  MetricProvider,
  ProviderAnswer,
  ProviderResult,
  RunningMeasurement,
} from "./port.ts";

/**
 * The Kayenta provider, as Argo's `metricproviders/kayenta` drives Kayenta's REST API. A
 * measurement is a canary execution, which Kayenta runs asynchronously:
 *
 * 1. `GET {address}/canaryConfig?application=…&configurationAccountName=…` finds the config's id
 *    by `canaryConfigName` (Argo sends the storage account as `configurationAccountName` here, and
 *    so does this provider, so a template behaves as it did under Argo);
 * 2. `POST {address}/canary/{id}?application=…&metricsAccountName=…&configurationAccountName=…&storageAccountName=…`
 *    with the scopes and thresholds starts the execution; the measurement is Running, with its
 *    `canaryExecutionId` in the metadata, and is resumed 15 s later;
 * 3. `GET {address}/canary/{canaryExecutionId}` at each later tick, until `complete` is true: the
 *    score (`result.judgeResult.score.score`, cut to a whole number) is the value, and the
 *    measurement is Successful at or above `threshold.pass`, Inconclusive at or above
 *    `threshold.marginal`, Failed below it. The metric's conditions are not evaluated.
 *
 * Every request times out after 15 s (Argo's client). Messages are Argo's: `Invalid Response: HTTP
 * 500` (the lookup), `Canary config not found`, `Invalid Response` (the execution's start or read),
 * `Invalid canaryExecutionId`, `Missing Complete Status`, `Missing Score`, and Go's decoding errors.
 */
export class KayentaMetricProvider implements MetricProvider {
  private readonly fetch: Fetch;
  private readonly maxBodyBytes: number;

  constructor(options: HttpOptions = {}) {
    this.fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  /** Argo's Run: finds the config, starts the canary execution. */
  async measure(metric: Metric, ctx: MeasureContext): Promise<ProviderAnswer> {
    const k = metric.provider.kayenta;
    if (!k) return { ok: false, message: `metric "${metric.name}" has no kayenta provider` };
    const configId = await this.configId(k, ctx);
    if ("error" in configId) return { ok: false, message: configId.error };
    // A map, as Argo's: a later scope of the same name replaces an earlier one.
    const scopes = new Map<string, unknown>();
    for (const scope of k.scopes) {
      const request = scopeRequest(scope, {
        runStartedAt: ctx.startedAt ?? ctx.now,
        now: ctx.now,
        interval: metric.interval,
        lookback: k.lookback,
      });
      if ("error" in request) return { ok: false, message: request.error };
      scopes.set(scope.name, request.scope);
    }
    const url = `${k.address}/canary/${configId.id}?application=${k.application}&metricsAccountName=${k.metricsAccountName}&configurationAccountName=${k.configurationAccountName}&storageAccountName=${k.storageAccountName}`;
    const body = marshalRequest(scopes, k.threshold);
    const answer = await this.request("POST", url, ctx, body);
    if ("error" in answer) return { ok: false, message: answer.error };
    if (answer.status !== 200) return { ok: false, message: "Invalid Response" };
    const decoded = decodeObject(answer.text);
    if ("error" in decoded) return { ok: false, message: decoded.error };
    // Go's fmt.Sprintf("%v") of the id: a missing one prints `<nil>`, which Argo keeps.
    const id = goV(decoded.object.canaryExecutionId);
    if (id.length === 0) return { ok: false, message: "Invalid canaryExecutionId" };
    return { ok: "running", metadata: { canaryExecutionId: id }, resumeAfterSeconds: KAYENTA_RESUME_SECONDS };
  }

  /** Argo's Resume: reads the execution; Running again while it is not complete. */
  async resume(metric: Metric, running: RunningMeasurement, ctx: MeasureContext): Promise<ProviderAnswer> {
    const k = metric.provider.kayenta;
    if (!k) return { ok: false, message: `metric "${metric.name}" has no kayenta provider` };
    const metadata = running.metadata;
    const url = `${k.address}/canary/${metadata.canaryExecutionId ?? ""}`;
    const answer = await this.request("GET", url, ctx);
    if ("error" in answer) return { ok: false, message: answer.error, metadata };
    if (answer.status !== 200) return { ok: false, message: "Invalid Response", metadata };
    const decoded = decodeObject(answer.text);
    if ("error" in decoded) return { ok: false, message: decoded.error, metadata };
    const complete = nested(decoded.object, ["complete"], "bool");
    if ("error" in complete) return { ok: false, message: complete.error, metadata };
    if (complete.value === undefined) return { ok: false, message: "Missing Complete Status", metadata };
    if (complete.value === false) {
      return { ok: "running", metadata, resumeAfterSeconds: KAYENTA_RESUME_SECONDS };
    }
    const score = nested(decoded.object, ["result", "judgeResult", "score", "score"], "float64");
    if ("error" in score) return { ok: false, message: score.error, metadata };
    if (score.value === undefined) return { ok: false, message: "Missing Score", metadata };
    return scored(Math.trunc(score.value as number), k.threshold, metadata);
  }

  private async configId(
    k: KayentaProvider,
    ctx: MeasureContext,
  ): Promise<{ id: string } | { error: string }> {
    const url = `${k.address}/canaryConfig?application=${k.application}&configurationAccountName=${k.storageAccountName}`;
    const answer = await this.request("GET", url, ctx);
    if ("error" in answer) return answer;
    if (answer.status !== 200) return { error: `Invalid Response: HTTP ${answer.status}` };
    return findConfig(answer.text, k.canaryConfigName);
  }

  private async request(
    method: "GET" | "POST",
    url: string,
    ctx: MeasureContext,
    body?: string,
  ): Promise<{ status: number; text: string } | { error: string }> {
    try {
      const res = await this.fetch(url, {
        method,
        headers: body === undefined ? {} : { "Content-Type": "application/json" },
        ...(body === undefined ? {} : { body }),
        signal: deadline(KAYENTA_TIMEOUT_SECONDS, ctx.signal),
      });
      const read = await readBody(res, this.maxBodyBytes);
      if ("error" in read) return { error: read.error };
      return { status: res.status, text: read.text };
    } catch (e) {
      return { error: describeFetchError(method, url, e, KAYENTA_TIMEOUT_SECONDS) };
    }
  }
}

/** Argo's `httpConnectionTimeout`. */
export const KAYENTA_TIMEOUT_SECONDS = 15;
/** Argo's `resumeDelay`: how long after a start or an incomplete read the execution is read again. */
export const KAYENTA_RESUME_SECONDS = 15;

/** Argo's `evaluateResult`: the score against the thresholds, printed as Go's `%v` of an int. */
export function scored(
  score: number,
  threshold: { pass: number; marginal: number },
  metadata?: Record<string, string>,
): ProviderResult {
  const phase = kayentaPhase(score, threshold);
  return {
    ok: true,
    result: score,
    resultType: "float64",
    value: String(score),
    phase,
    ...(metadata ? { metadata } : {}),
  };
}

/** Argo's `evaluateResult`: Successful at or above `pass`, Inconclusive at or above `marginal`. */
export function kayentaPhase(
  score: number,
  threshold: { pass: number; marginal: number },
): "Successful" | "Inconclusive" | "Failed" {
  if (score >= threshold.pass) return "Successful";
  return score >= threshold.marginal ? "Inconclusive" : "Failed";
}

/** The id of the config named `name` in a `GET /canaryConfig` answer, or Go's error, or Argo's. */
export function findConfig(text: string, name: string): { id: string } | { error: string } {
  const syntax = goJSONSyntaxError(text);
  if (syntax) return { error: syntax };
  const root: unknown = JSON.parse(text);
  if (root !== null && !Array.isArray(root)) {
    return {
      error: `json: cannot unmarshal ${goJsonKind(root)} into Go value of type []kayenta.canaryConfig`,
    };
  }
  const configs: Array<{ id: string; name: string }> = [];
  for (const entry of root ?? []) {
    if (entry === null) {
      configs.push({ id: "", name: "" });
      continue;
    }
    if (!isObject(entry)) {
      return {
        error: `json: cannot unmarshal ${goJsonKind(entry)} into Go value of type kayenta.canaryConfig`,
      };
    }
    const config = { id: "", name: "" };
    for (const field of ["Id", "Name"] as const) {
      const value = goField(entry, field);
      if (value === undefined || value === null) continue;
      if (typeof value !== "string")
        return { error: fieldTypeError(goJsonKind(value), "canaryConfig", field, "string") };
      config[field === "Id" ? "id" : "name"] = value;
    }
    configs.push(config);
  }
  const found = configs.find((c) => c.name === name);
  return found ? { id: found.id } : { error: "Canary config not found" };
}

/** Go's `json.Unmarshal` into `map[string]any`. */
function decodeObject(text: string): { object: Record<string, unknown> } | { error: string } {
  const syntax = goJSONSyntaxError(text);
  if (syntax) return { error: syntax };
  const root: unknown = JSON.parse(text);
  if (root === null) return { object: {} };
  if (!isObject(root)) {
    return {
      error: `json: cannot unmarshal ${goJsonKind(root)} into Go value of type map[string]interface {}`,
    };
  }
  return { object: root };
}

/** Go's `%T` of a value `encoding/json` decoded into `interface{}`. */
function goTypeName(value: unknown): string {
  if (value === null || value === undefined) return "<nil>";
  if (typeof value === "number") return "float64";
  if (typeof value === "string") return "string";
  if (typeof value === "boolean") return "bool";
  if (Array.isArray(value)) return "[]interface {}";
  return "map[string]interface {}";
}

/**
 * apimachinery's `unstructured.NestedBool` / `NestedFloat64`: the value at `fields`, undefined
 * when a field on the way is absent (or null), or its accessor error
 * (`.complete accessor error: yes is of the type string, expected bool`).
 */
export function nested(
  object: Record<string, unknown>,
  fields: readonly string[],
  expected: "bool" | "float64",
): { value: unknown } | { error: string } {
  let value: unknown = object;
  for (const [i, field] of fields.entries()) {
    if (value === null || value === undefined) return { value: undefined };
    if (!isObject(value)) {
      const path = `.${fields.slice(0, i + 1).join(".")}`;
      return {
        error: `${path} accessor error: ${goV(value)} is of the type ${goTypeName(value)}, expected map[string]interface{}`,
      };
    }
    if (!Object.hasOwn(value, field)) return { value: undefined };
    value = value[field];
  }
  const ok = expected === "bool" ? typeof value === "boolean" : typeof value === "number";
  if (!ok) {
    return {
      error: `.${fields.join(".")} accessor error: ${goV(value)} is of the type ${goTypeName(value)}, expected ${expected}`,
    };
  }
  return { value };
}

type Scope = KayentaProvider["scopes"][number];

/**
 * Argo's `getScopeRequest`: a scope as Kayenta's canary request writes it (`region` sent as
 * `location`). An empty start and end are the measurement's window: from one `interval` before
 * now (or, with `lookback`, from the run's start) to now, in RFC 3339 seconds.
 */
export function scopeRequest(
  scope: Scope,
  at: { runStartedAt: Date; now: Date; interval: number | undefined; lookback: boolean },
): { scope: Record<string, unknown> } | { error: string } {
  const control = { ...scope.controlScope };
  const experiment = { ...scope.experimentScope };
  if ((control.start === "") !== (experiment.start === "")) {
    return { error: "controlScope.start and experimentScope.start must both be set or be empty" };
  }
  if ((control.end === "") !== (experiment.end === "")) {
    return { error: "controlScope.end and experimentScope.end must both be set or be empty" };
  }
  if (control.start === "") {
    let start: Date;
    if (at.lookback) start = at.runStartedAt;
    else if (at.interval === undefined) {
      return { error: 'Invalid duration "": time: invalid duration ""' };
    } else start = new Date(at.now.getTime() - at.interval * 1000);
    control.start = rfc3339(start);
    experiment.start = control.start;
  }
  if (control.end === "") {
    control.end = rfc3339(at.now);
    experiment.end = control.end;
  }
  const detail = (d: typeof control) => ({
    scope: d.scope,
    location: d.region,
    step: d.step,
    ...(d.start !== "" ? { start: d.start } : {}),
    ...(d.end !== "" ? { end: d.end } : {}),
  });
  return { scope: { controlScope: detail(control), experimentScope: detail(experiment) } };
}

/** Go's `time.RFC3339` of a UTC time: whole seconds, `Z`. */
function rfc3339(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`;
}

/**
 * Go's `json.Marshal` of Argo's `AnalysisRequest`: struct fields in their declared order, the
 * scopes (a map) by name in byte order, `<`, `>`, `&`, U+2028 and U+2029 escaped.
 */
export function marshalRequest(
  scopes: ReadonlyMap<string, unknown>,
  threshold: { pass: number; marginal: number },
): string {
  // Go sorts a map's keys by their bytes; UTF-16 order is the same short of astral characters.
  const names = [...scopes.keys()].sort();
  const members = names.map((name) => `${JSON.stringify(name)}:${JSON.stringify(scopes.get(name))}`);
  const json = `{"scopes":{${members.join(",")}},"thresholds":${JSON.stringify({ pass: threshold.pass, marginal: threshold.marginal })}}`;
  return json.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
