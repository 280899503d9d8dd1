import { randomUUID } from "node:crypto";
import { z } from "zod";
import { formatIssues } from "../../statemachine/problems.ts";
import { assign, cohortKeyOf, mirrored } from "./cohort.ts";
import {
  type Backend,
  comparePredictions,
  describeBackend,
  type ModelRouterConfig,
  type ModelRouterConfigInput,
  ModelRouterConfigSchema,
  valueAt,
} from "./config.ts";
import {
  keptPrediction,
  MAX_FEEDBACK_BYTES,
  MAX_JSON_DEPTH,
  requestIdProblem,
  textNestsDeeper,
} from "./limits.ts";
import { mirrorSelects } from "./mirror-match.ts";
import { type Observations, Recorder, type RecorderOptions, summarize } from "./recorder.ts";

/**
 * The model router: one core, used by the local proxy and by the router Lambda, so a rollout
 * behaves the same on this machine and on AWS. For each request it
 * - picks the version: the candidate's sticky cohort (a hash of the user's key and the salt) or, not
 *   sticky, a per-request split; the primary otherwise;
 * - calls that version, records the answer (version, latency, success, user, prediction) and
 *   returns it with `x-model-version`, `x-request-id` and `x-route` on every answer, errors included;
 * - only then, for the mirror percentage of the primary's requests, queues a copy for the candidate
 *   (`x-shadow: true`): a bounded queue that is never awaited, so a slow, failing or hanging shadow
 *   changes neither the caller's answer nor its latency; a full queue drops the copy and counts it.
 *   The shadow's prediction is compared with the one the caller received and recorded.
 * It also takes feedback (`POST /feedback`) and serves `GET /compare` (see `handle`).
 */

/** A request as the router sees it, whatever carried it (node:http, a Function URL event). */
export interface RouterRequest {
  readonly method: string;
  /** Path and query, e.g. `/predict?x=1`. */
  readonly url: string;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body: string;
}

export interface RouterResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Calls one version: the router's only outside dependency, injectable. */
export type CallBackend = (
  backend: Backend,
  request: { method: string; url: string; headers: Record<string, string>; body: string },
  timeoutMs: number,
) => Promise<{ status: number; headers: Record<string, string>; body: string }>;

/** What a request was answered by. */
export const VERSION_HEADER = "x-model-version";
export const REQUEST_ID_HEADER = "x-request-id";
export const ROUTE_HEADER = "x-route";
export const SHADOW_HEADER = "x-shadow";

export interface ModelRouterOptions extends RecorderOptions {
  readonly config?: ModelRouterConfigInput;
  readonly call?: CallBackend;
  /** Where answers and feedback are kept; default an in-memory {@link Recorder} (with these options). */
  readonly observations?: Observations;
  /** Non-sticky split: true = candidate. Default: a uniform draw against the weight. */
  readonly split?: (weight: number) => boolean;
  /** Milliseconds a served version may take; default 30 s (then a 504). */
  readonly timeoutMs?: number;
  /** Milliseconds a shadow call may take; default 30 s. */
  readonly shadowTimeoutMs?: number;
  /** Mirror copies waiting at most; default 1,000 (then dropped and counted). */
  readonly mirrorQueue?: number;
  /** Mirror copies in flight at once; default 4. */
  readonly mirrorConcurrency?: number;
  /** Request ids when the caller sends none; default a random UUID. */
  readonly requestId?: () => string;
}

interface MirrorJob {
  readonly backend: Backend;
  readonly request: RouterRequest;
  readonly requestId: string;
  readonly user: string;
  readonly served: unknown;
  readonly config: ModelRouterConfig;
}

/** A model router's counters for `GET /admin/config`. */
export interface MirrorCounters {
  queued: number;
  sent: number;
  dropped: number;
  failed: number;
}

const FeedbackSchema = z
  .object({
    request_id: z.string().superRefine((id, ctx) => {
      const problem = requestIdProblem(id, "request_id");
      if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
    }),
    /** The outcome was good (a click, no chargeback). */
    good: z.boolean().optional(),
    /** Or the true label, compared with the answer's prediction as the shadow's are. */
    label: z.unknown().optional(),
  })
  .strict()
  .refine((f) => (f.good === undefined) !== (f.label === undefined), {
    message: "give exactly one of good (true/false) or label (the true value)",
  });

export class ModelRouter {
  readonly recorder: Observations;
  readonly mirror: MirrorCounters = { queued: 0, sent: 0, dropped: 0, failed: 0 };
  #config: ModelRouterConfig | null;
  readonly #call: CallBackend;
  readonly #split: (weight: number) => boolean;
  readonly #timeoutMs: number;
  readonly #shadowTimeoutMs: number;
  readonly #queueLimit: number;
  readonly #concurrency: number;
  readonly #requestId: () => string;
  readonly #queue: MirrorJob[] = [];
  #inFlight = 0;
  #idle: Array<() => void> = [];

  constructor(options: ModelRouterOptions = {}) {
    this.recorder = options.observations ?? new Recorder(options);
    this.#config = options.config ? ModelRouterConfigSchema.parse(options.config) : null;
    this.#call = options.call ?? fetchBackend;
    this.#split = options.split ?? ((weight) => Math.random() * 100 < weight);
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#shadowTimeoutMs = options.shadowTimeoutMs ?? 30_000;
    this.#queueLimit = options.mirrorQueue ?? 1000;
    this.#concurrency = options.mirrorConcurrency ?? 4;
    this.#requestId = options.requestId ?? randomUUID;
  }

  get config(): ModelRouterConfig | null {
    return this.#config;
  }

  /** Replaces the whole configuration (already validated, or validated here). */
  configure(config: ModelRouterConfigInput): ModelRouterConfig {
    this.#config = ModelRouterConfigSchema.parse(config);
    return this.#config;
  }

  /**
   * The router's own endpoints, then routing: `POST /feedback` (`{"request_id", "good"}` or
   * `{"request_id", "label"}`), `GET /compare?primary=&candidate=&window=`, anything else routed.
   */
  async handle(request: RouterRequest): Promise<RouterResponse> {
    const path = request.url.split("?")[0];
    if (path === "/feedback" && request.method === "POST") return await this.feedback(request.body);
    if (path === "/compare" && request.method === "GET") return await this.compare(request.url);
    return this.route(request);
  }

  /**
   * Routes one request and answers it; the mirror copy, if any, is queued after the answer is
   * built. `force` sends it to the candidate whatever its cohort (a testers header route).
   */
  async route(request: RouterRequest, force?: "candidate"): Promise<RouterResponse> {
    const config = this.#config;
    const given = request.headers[REQUEST_ID_HEADER];
    const problem = given === undefined ? undefined : requestIdProblem(given, REQUEST_ID_HEADER);
    if (problem !== undefined) return json(400, { error: problem });
    const requestId = given || this.#requestId();
    if (config === null) {
      return json(
        503,
        { error: "the model router has no configuration yet" },
        { [REQUEST_ID_HEADER]: requestId },
      );
    }
    if (given !== undefined && (await this.recorder.has(given))) return idTaken(given);
    const body = parseJson(request.body);
    const user = cohortKeyOf(config.key, request.headers, body) ?? requestId;
    let arm: "primary" | "candidate" = "primary";
    if (config.candidate !== null && force === "candidate") arm = "candidate";
    else if (config.candidate !== null && config.weight > 0) {
      const salt = config.salt ?? config.candidate.name;
      const toCandidate = config.sticky
        ? assign(user, salt, config.weight) === "candidate"
        : this.#split(config.weight);
      if (toCandidate) arm = "candidate";
    }
    const backend = arm === "candidate" && config.candidate ? config.candidate : config.primary;
    const started = performance.now();
    const answer = await this.#invoke(backend, request, requestId, false, this.#timeoutMs);
    const latencyMs = performance.now() - started;
    const ok = answer.status < 500;
    const prediction = ok ? keptPrediction(valueAt(parseJson(answer.body), config.compare.path)) : undefined;
    // Kept before the answer is handed back, so feedback sent right after it finds the answer; a
    // request that took the same id meanwhile (at once, or in another environment) keeps it.
    const bound = await this.recorder.add({
      at: this.recorder.now(),
      version: backend.name,
      role: "served",
      latencyMs,
      ok,
      requestId,
      user,
      ...(prediction !== undefined ? { prediction } : {}),
    });
    if (!bound) return idTaken(requestId);
    if (
      arm === "primary" &&
      config.candidate !== null &&
      mirrored(requestId, config.mirrorPercent) &&
      mirrorSelects(config.mirrorMatch, request)
    ) {
      this.#enqueue({ backend: config.candidate, request, requestId, user, served: prediction, config });
    }
    const headers: Record<string, string> = {
      ...answer.headers,
      [VERSION_HEADER]: backend.name,
      [REQUEST_ID_HEADER]: requestId,
      [ROUTE_HEADER]: arm,
    };
    return { status: answer.status, headers, body: answer.body };
  }

  /** `POST /feedback`: attaches a delayed outcome to the answer of a request id, and so to its version. */
  async feedback(text: string): Promise<RouterResponse> {
    const bytes = Buffer.byteLength(text);
    if (bytes > MAX_FEEDBACK_BYTES) {
      return json(413, {
        error: `feedback body is ${bytes} bytes; the limit is ${MAX_FEEDBACK_BYTES} bytes`,
      });
    }
    if (textNestsDeeper(text, MAX_JSON_DEPTH)) {
      return json(400, {
        error: `feedback body is nested deeper than ${MAX_JSON_DEPTH} levels (a label nests at most ${MAX_JSON_DEPTH - 1})`,
      });
    }
    const raw = parseJson(text);
    if (raw === undefined) return json(400, { error: "feedback body is not JSON" });
    const parsed = FeedbackSchema.safeParse(raw);
    if (!parsed.success) return json(400, { error: formatIssues(parsed.error, "(body)") });
    const { request_id: requestId, good, label } = parsed.data;
    let verdict = good;
    if (verdict === undefined) {
      const served = await this.recorder.served(requestId);
      const config = this.#config;
      if (served && config) {
        verdict = comparePredictions(config.compare, label, served.prediction)?.agree ?? false;
      } else verdict = false;
    }
    const outcome = await this.recorder.feedback(requestId, verdict);
    if (!outcome.ok) return json(outcome.status, { error: outcome.message });
    return json(200, { request_id: requestId, version: outcome.version, good: outcome.good });
  }

  /**
   * `GET /compare?primary=NAME&candidate=NAME&window=SECONDS`: both versions' summaries, the
   * samples provider's contract. `primary`/`stable` and `candidate`/`canary` name the configured
   * versions, so a template needs no version names.
   */
  async compare(url: string): Promise<RouterResponse> {
    const query = new URL(url, "http://router").searchParams;
    const primary = query.get("primary");
    const candidate = query.get("candidate");
    const rawWindow = query.get("window") ?? "60";
    const seconds = Number(rawWindow);
    const missing = [primary ? undefined : "primary", candidate ? undefined : "candidate"].filter(Boolean);
    if (missing.length > 0) {
      return json(400, {
        error: `GET /compare needs ?${missing.join(" and ")}=NAME (give ?primary=NAME&candidate=NAME&window=SECONDS)`,
      });
    }
    if (!Number.isFinite(seconds) || seconds <= 0) {
      return json(400, {
        error: `window must be a number of seconds above 0, got ${JSON.stringify(rawWindow)}`,
      });
    }
    const resolve = (name: string) => resolveVersion(this.#config, name);
    const observed = await this.recorder.window(seconds);
    return json(200, {
      window: seconds,
      primary: summarize(observed.samples, resolve(primary as string)),
      candidate: summarize(observed.samples, resolve(candidate as string)),
      mirror: { ...this.mirror },
      // A store that reads at most `limit` samples says when the window held more (newest kept).
      samples: { read: observed.read, limit: observed.limit, truncated: observed.truncated },
    });
  }

  /** Resolves when no mirror copy is queued or in flight (tests; a Lambda before it returns). */
  idle(): Promise<void> {
    if (this.#queue.length === 0 && this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #enqueue(job: MirrorJob): void {
    if (this.#queue.length >= this.#queueLimit) {
      this.mirror.dropped += 1;
      return;
    }
    this.mirror.queued += 1;
    this.#queue.push(job);
    // Never on the caller's path: the workers start after the current answer has been handed back.
    setImmediate(() => this.#drain());
  }

  #drain(): void {
    while (this.#inFlight < this.#concurrency && this.#queue.length > 0) {
      const job = this.#queue.shift() as MirrorJob;
      this.#inFlight += 1;
      this.#shadow(job)
        .catch(() => {
          this.mirror.failed += 1;
        })
        .finally(() => {
          this.#inFlight -= 1;
          this.#drain();
          if (this.#queue.length === 0 && this.#inFlight === 0) {
            for (const resolve of this.#idle.splice(0)) resolve();
          }
        });
    }
  }

  async #shadow(job: MirrorJob): Promise<void> {
    const started = performance.now();
    const answer = await this.#invoke(job.backend, job.request, job.requestId, true, this.#shadowTimeoutMs);
    const latencyMs = performance.now() - started;
    const ok = answer.status < 500;
    const prediction = ok ? valueAt(parseJson(answer.body), job.config.compare.path) : undefined;
    const agreement = ok ? comparePredictions(job.config.compare, job.served, prediction) : undefined;
    this.mirror.sent += 1;
    if (!ok) this.mirror.failed += 1;
    await this.recorder.add({
      at: this.recorder.now(),
      version: job.backend.name,
      role: "shadow",
      latencyMs,
      ok,
      requestId: job.requestId,
      user: job.user,
      ...(agreement
        ? {
            agree: agreement.agree,
            ...(agreement.absDiff !== undefined ? { absDiff: agreement.absDiff } : {}),
            ...(agreement.relDiff !== undefined ? { relDiff: agreement.relDiff } : {}),
          }
        : {}),
    });
  }

  /** One call to a version; a failure is an answer (502, or 504 after the timeout) naming the version. */
  async #invoke(
    backend: Backend,
    request: RouterRequest,
    requestId: string,
    shadow: boolean,
    timeoutMs: number,
  ): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    }
    headers[REQUEST_ID_HEADER] = requestId;
    if (shadow) headers[SHADOW_HEADER] = "true";
    try {
      const answer = await this.#call(
        backend,
        { method: request.method, url: request.url, headers, body: request.body },
        timeoutMs,
      );
      const out: Record<string, string> = {};
      for (const [name, value] of Object.entries(answer.headers)) {
        if (!HOP_BY_HOP.has(name.toLowerCase())) out[name.toLowerCase()] = value;
      }
      return { status: answer.status, headers: out, body: answer.body };
    } catch (error) {
      const timedOut = (error as Error)?.name === "TimeoutError";
      const status = timedOut ? 504 : 502;
      return {
        status,
        headers: { "content-type": "application/json" },
        body: `${JSON.stringify({
          error: `${backend.name} (${describeBackend(backend)}) ${timedOut ? `did not answer within ${timeoutMs} ms` : `is unreachable: ${(error as Error).message}`}`,
        })}\n`,
      };
    }
  }
}

/** `stable`/`primary` and `canary`/`candidate` name the configured versions; any other name is itself. */
export function resolveVersion(config: ModelRouterConfig | null, name: string): string {
  if (config === null) return name;
  if (name === "primary" || name === "stable") return config.primary.name;
  if ((name === "candidate" || name === "canary") && config.candidate) return config.candidate.name;
  return name;
}

/** Headers that belong to one connection, not to the request or answer a proxy passes on. */
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
]);
/** The router buffers bodies: their length is set again by whoever sends them. */
const HOP_BY_HOP = new Set([...HOP_BY_HOP_HEADERS, "content-length"]);

function parseJson(text: string): unknown {
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A request whose id already names a kept answer: ids are single-use, so its feedback stays that answer's. */
function idTaken(requestId: string): RouterResponse {
  return json(409, {
    error: `request id ${JSON.stringify(requestId)} already names an answer: send a new x-request-id, or none and read the answer's`,
  });
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): RouterResponse {
  return {
    status,
    headers: { "content-type": "application/json", ...headers },
    body: `${JSON.stringify(body)}\n`,
  };
}

/** The default {@link CallBackend}: `fetch` with a deadline, the body read whole. */
export const fetchBackend: CallBackend = async (backend, request, timeoutMs) => {
  if (backend.url === undefined) throw new Error(`${describeBackend(backend)} is not an HTTP backend`);
  const base = backend.url.replace(/\/+$/, "");
  const response = await fetch(base + request.url, {
    method: request.method,
    headers: request.headers,
    ...(request.method === "GET" || request.method === "HEAD" ? {} : { body: request.body }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return { status: response.status, headers, body: await response.text() };
};
