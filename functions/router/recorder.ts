/**
 * What the model router records of every answer, per version, and the `/compare` view of it. A
 * bounded ring of samples (served answers and shadow answers) plus a bounded index of served
 * request ids, so feedback that arrives later (a click, a chargeback, a delayed label) is attached
 * to the answer it judges and so to the version that gave it. A request id names one answer while
 * it is kept. Memory is bounded by both limits: the oldest sample, and the oldest request id, are
 * forgotten first.
 */

/** One answer the router saw. */
export interface Sample {
  /** Epoch ms the answer completed. */
  readonly at: number;
  readonly version: string;
  /** `served`: the caller got this answer; `shadow`: a mirrored copy, recorded and thrown away. */
  readonly role: "served" | "shadow";
  readonly latencyMs: number;
  /** Status below 500 and the model answered. */
  readonly ok: boolean;
  readonly requestId: string;
  readonly user: string;
  /** The prediction at the configured path (served answers, for delayed labels). */
  readonly prediction?: unknown;
  /** Shadow answers: agreement with the answer the caller received; undefined when not comparable. */
  agree?: boolean;
  absDiff?: number;
  relDiff?: number;
  /** Served answers: the feedback given later (true = good). */
  feedback?: boolean;
}

/** The `/compare` summary of one version's shadow answers. */
export interface ShadowSummary {
  requests: number;
  errors: number;
  error_rate: number | null;
  p50_ms: number | null;
  p95_ms: number | null;
  /** Shadow answers whose prediction could be compared with the served one. */
  compared: number;
  agreement: number;
  agreement_rate: number | null;
  disagreement_rate: number | null;
  mean_abs_diff: number | null;
  mean_rel_diff: number | null;
}

/**
 * What `GET /compare` answers for one version: the fields of the local proxy's summary (requests,
 * errors, rates, latency; served answers only) plus feedback, users and the shadow's view.
 */
export interface ModelVersionSummary {
  version: string;
  requests: number;
  ok: number;
  errors: number;
  success_rate: number | null;
  error_rate: number | null;
  mean_ms: number | null;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
  /** Distinct cohort keys served. */
  users: number;
  /** Served answers that received feedback, how many of those were good, and the share. */
  feedback: number;
  feedback_good: number;
  feedback_bad: number;
  feedback_rate: number | null;
  shadow: ShadowSummary;
}

/** What feedback did: attached to a version, or why not. */
export type FeedbackOutcome =
  | { readonly ok: true; readonly version: string; readonly good: boolean }
  | { readonly ok: false; readonly status: 404 | 409; readonly message: string };

export interface RecorderOptions {
  /** Samples kept (served and shadow together); default 200,000. */
  readonly maxSamples?: number;
  /** Served request ids kept for feedback; default 100,000. Older ids get a 404 naming the limit. */
  readonly maxRequestIds?: number;
  readonly now?: () => number;
}

export const DEFAULT_MAX_SAMPLES = 200_000;
export const DEFAULT_MAX_REQUEST_IDS = 100_000;

export class Recorder implements Observations {
  readonly maxSamples: number;
  readonly maxRequestIds: number;
  readonly now: () => number;
  readonly #ring: Sample[] = [];
  #next = 0;
  /** Served request id → its sample; insertion order is age, so the first key is the oldest. */
  readonly #served = new Map<string, Sample>();

  constructor(options: RecorderOptions = {}) {
    this.maxSamples = options.maxSamples ?? DEFAULT_MAX_SAMPLES;
    this.maxRequestIds = options.maxRequestIds ?? DEFAULT_MAX_REQUEST_IDS;
    this.now = options.now ?? Date.now;
  }

  /** {@link Observations.add}: a served answer whose request id is already kept is not recorded (false). */
  add(sample: Sample): boolean {
    if (sample.role === "served" && this.#served.has(sample.requestId)) return false;
    if (this.#ring.length < this.maxSamples) this.#ring.push(sample);
    else this.#ring[this.#next] = sample;
    this.#next = (this.#next + 1) % this.maxSamples;
    if (sample.role !== "served") return true;
    this.#served.set(sample.requestId, sample);
    if (this.#served.size > this.maxRequestIds) {
      const oldest = this.#served.keys().next().value as string;
      this.#served.delete(oldest);
    }
    return true;
  }

  /** {@link Observations.has}. */
  has(requestId: string): boolean {
    return this.#served.has(requestId);
  }

  /** The served answer of a request id, while it is kept. */
  served(requestId: string): Sample | undefined {
    return this.#served.get(requestId);
  }

  /** Attaches feedback to the answer of `requestId`; a second feedback for the same id is refused. */
  feedback(requestId: string, good: boolean): FeedbackOutcome {
    const sample = this.#served.get(requestId);
    if (!sample) {
      return {
        ok: false,
        status: 404,
        message: `no answer with request id ${JSON.stringify(requestId)} is kept (the router keeps the last ${this.maxRequestIds} request ids)`,
      };
    }
    if (sample.feedback !== undefined) {
      return {
        ok: false,
        status: 409,
        message: `request id ${JSON.stringify(requestId)} already has feedback`,
      };
    }
    sample.feedback = good;
    return { ok: true, version: sample.version, good };
  }

  /** Samples of the last `windowSeconds` (by completion time). */
  #recent(windowSeconds: number): Sample[] {
    const since = this.now() - windowSeconds * 1000;
    return this.#ring.filter((s) => s.at > since);
  }

  /** The `/compare` summary of `version` over the last `windowSeconds`. */
  summary(version: string, windowSeconds: number): ModelVersionSummary {
    return summarize(this.#recent(windowSeconds), version);
  }

  /** {@link Observations.window}: every kept sample of the window (memory is bounded by `maxSamples`). */
  window(windowSeconds: number): ObservedWindow {
    return {
      samples: this.#recent(windowSeconds),
      read: this.#ring.length,
      limit: this.maxSamples,
      truncated: false,
    };
  }
}

/** The samples of a `/compare` window and how they were read. */
export interface ObservedWindow {
  readonly samples: readonly Sample[];
  /** Samples (or stored items) read to answer. */
  readonly read: number;
  /** The most the store reads for one window. */
  readonly limit: number;
  /** True when the limit cut the window: the oldest samples of the window were not read. */
  readonly truncated: boolean;
}

type MaybePromise<T> = T | Promise<T>;

/**
 * Where the router keeps what `/compare` summarizes: served answers, shadow answers and feedback.
 * In memory ({@link Recorder}: one process, the local proxy) or in DynamoDB (`dynamodb-observations.ts`:
 * the router function, whose execution environments share one table).
 */
export interface Observations {
  now(): number;
  /**
   * Records an answer. A served answer binds its request id to itself: when a kept served answer
   * already has that id, nothing is recorded and the answer is false (the id is taken), so no
   * later request can take over an answer's id, nor its feedback.
   */
  add(sample: Sample): MaybePromise<boolean>;
  /** Whether a kept served answer has this request id (it cannot be used again while kept). */
  has(requestId: string): MaybePromise<boolean>;
  /** The served answer of a request id, while it is kept (a delayed label is compared with its prediction). */
  served(requestId: string): MaybePromise<Sample | undefined>;
  /** Attaches feedback to the answer of `requestId`: 404 when it is not kept, 409 for a second feedback. */
  feedback(requestId: string, good: boolean): MaybePromise<FeedbackOutcome>;
  /** The samples completed in the last `windowSeconds`. */
  window(windowSeconds: number): MaybePromise<ObservedWindow>;
}

/** The `/compare` summary of `version` among `samples`: one rule for every store. */
export function summarize(samples: readonly Sample[], version: string): ModelVersionSummary {
  const recent = samples.filter((s) => s.version === version);
  const served = recent.filter((s) => s.role === "served");
  const shadow = recent.filter((s) => s.role === "shadow");
  const ok = served.filter((s) => s.ok).length;
  const latencies = served.map((s) => s.latencyMs).sort((a, b) => a - b);
  const withFeedback = served.filter((s) => s.feedback !== undefined);
  const good = withFeedback.filter((s) => s.feedback === true).length;
  const compared = shadow.filter((s) => s.agree !== undefined);
  const agreement = compared.filter((s) => s.agree === true).length;
  // Sorted, so the sums (and so the means) do not depend on the order a store returns samples in.
  const abs = compared.flatMap((s) => (s.absDiff === undefined ? [] : [s.absDiff])).sort((a, b) => a - b);
  const rel = compared.flatMap((s) => (s.relDiff === undefined ? [] : [s.relDiff])).sort((a, b) => a - b);
  const shadowErrors = shadow.filter((s) => !s.ok).length;
  const shadowLatencies = shadow.map((s) => s.latencyMs).sort((a, b) => a - b);
  return {
    version,
    requests: served.length,
    ok,
    errors: served.length - ok,
    success_rate: ratio(ok, served.length),
    error_rate: ratio(served.length - ok, served.length),
    mean_ms: latencies.length === 0 ? null : round(latencies.reduce((a, b) => a + b, 0) / latencies.length),
    p50_ms: nearestRank(latencies, 0.5),
    p95_ms: nearestRank(latencies, 0.95),
    p99_ms: nearestRank(latencies, 0.99),
    users: new Set(served.map((s) => s.user)).size,
    feedback: withFeedback.length,
    feedback_good: good,
    feedback_bad: withFeedback.length - good,
    feedback_rate: ratio(good, withFeedback.length),
    shadow: {
      requests: shadow.length,
      errors: shadowErrors,
      error_rate: ratio(shadowErrors, shadow.length),
      p50_ms: nearestRank(shadowLatencies, 0.5),
      p95_ms: nearestRank(shadowLatencies, 0.95),
      compared: compared.length,
      agreement,
      agreement_rate: ratio(agreement, compared.length),
      disagreement_rate: ratio(compared.length - agreement, compared.length),
      mean_abs_diff: abs.length === 0 ? null : abs.reduce((a, b) => a + b, 0) / abs.length,
      mean_rel_diff: rel.length === 0 ? null : rel.reduce((a, b) => a + b, 0) / rel.length,
    },
  };
}

/** null without observations, so no condition can pass a version nobody called. */
const ratio = (part: number, whole: number) => (whole === 0 ? null : part / whole);

/** Nearest-rank percentile of sorted values (the reference's and the proxy's rule). */
function nearestRank(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return round(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number);
}

/** Microsecond precision: enough for a condition, and no float noise in the JSON. */
const round = (ms: number) => Math.round(ms * 1000) / 1000;
