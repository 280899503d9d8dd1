import { ARGO_DEFAULTS } from "../defaults.ts";
import { formatDuration } from "../duration.ts";
import type { Candidate } from "./candidates.ts";
import type { RunOutcome } from "./choose.ts";
import { type DesignInput, SLO_WINDOW_SECONDS } from "./input.ts";
import { LOOK_ALPHA, type Thresholds } from "./thresholds.ts";

/**
 * What a design accepts: the regressions its looks cannot see, with the figures that bound them,
 * and what a subtle regression (half the SLO's error rate) did in a simulation.
 */

export interface FailureMode {
  /** A short key: `errors-under-threshold`, `latency-buckets`, `small-paths`, ... */
  name: string;
  text: string;
}

/** The subtle regression's simulation: the error rate it failed at, and how the rollout ended. */
export interface SubtleRun {
  errorRate: number;
  run: RunOutcome;
}

const pct = (x: number) => `${Number((100 * x).toPrecision(3))}%`;
const ms = (seconds: number) => `${Math.round(seconds * 1000)} ms`;
const count = (n: number) => Math.round(n).toLocaleString("en-US");

/** P(Binomial(n, p) > k): a metric failing an analysis of n looks that tolerates k failures. */
function binomialAbove(n: number, p: number, k: number): number {
  let below = 0;
  let term = (1 - p) ** n;
  for (let i = 0; i <= k; i++) {
    below += term;
    term *= ((n - i) / (i + 1)) * (p / (1 - p));
  }
  return Math.max(0, 1 - below);
}

/** The chance a good version is rolled back: each of the two metrics of each analysis, at most alpha per look. */
export function falseRollbackBound(candidate: Candidate): number {
  const perMetric = binomialAbove(candidate.count, LOOK_ALPHA, candidate.failureLimit);
  return 1 - (1 - perMetric) ** (2 * candidate.weights.length);
}

function latencyBuckets(t: Thresholds): string {
  const { lower, upper } = t.bucket;
  const where = `the SLO's ${ms(t.p95Seconds)} falls inside the bucket ${lower}–${upper} s, where histogram_quantile interpolates linearly`;
  if (t.bucketBlindP95 > t.p95Seconds) {
    return `${where}: a version whose true p95 is between ${ms(t.p95Seconds)} and ${ms(t.bucketBlindP95)} reads under the SLO at every look (a log-normal latency like the simulated one's). Smaller tails pass too: the bad version this design was simulated against has ${pct(t.badSlowShare)} of its requests over ${ms(t.p95Seconds)}; with fewer a look passes it more often than not.`;
  }
  return `${where}: it reads a true p95 between ${ms(t.bucketBlindP95)} and ${ms(t.p95Seconds)} as over the SLO (a log-normal latency like the simulated one's), so a version just within the SLO can be stopped; a version over it is seen once more than ${pct(t.badSlowShare)} of its requests are over ${ms(t.p95Seconds)} (the bad version this design was simulated against).`;
}

function subtleText(input: DesignInput, subtle: SubtleRun): string {
  const { run, errorRate } = subtle;
  const head = `a version failing ${pct(errorRate)} of its requests (half the SLO's ${pct(input.sloErrorRate)})`;
  if (run.outcome === "aborted") {
    return `${head} was stopped in the simulation at ${formatDuration(run.at ?? 0)}, after ${count(run.newRequests)} requests (${count(run.newErrors)} failed).`;
  }
  const days = (SLO_WINDOW_SECONDS / 86_400) * (input.sloErrorRate / errorRate);
  const at = run.at === null ? "" : ` at ${formatDuration(run.at)}`;
  return `${head} was ${run.outcome === "promoted" ? "promoted" : `not stopped (${run.outcome})`}${at} in the simulation, having served ${count(run.newRequests)} requests (${count(run.newErrors)} failed). From then on everyone meets it: ${count(input.rps * errorRate * 86_400)} failed requests a day, at ${Number((errorRate / input.sloErrorRate).toPrecision(3))}× the pace the SLO allows, so the 30-day error budget would last ${Number(days.toPrecision(3))} days and an alert on its burn rate (1× or faster) never fires: it runs until a person looks.`;
}

/** The failure modes of the chosen candidate, in words, each with its figures. */
export function failureModes(
  input: DesignInput,
  t: Thresholds,
  chosen: Candidate,
  subtle: SubtleRun | undefined,
): FailureMode[] {
  const errorsHidden = t.errorRate - input.baselineErrorRate;
  const slowHidden = 0.05 - t.goodSlowShare;
  const errorLimit = ARGO_DEFAULTS.metric.consecutiveErrorLimit;
  return [
    {
      name: "errors-under-threshold",
      text: `A version failing under ${pct(t.errorRate)} of its requests passes a look more often than it fails it: the condition sits between the good version's ${pct(input.baselineErrorRate)} and the SLO's ${pct(input.sloErrorRate)}, where a look of ${count(t.lookSamples)} requests fails a good version at most ${LOOK_ALPHA} of the time. At ${count(input.rps)} rps such a version fails up to ${count(errorsHidden * input.rps * 86_400)} more requests a day than the good one.`,
    },
    { name: "latency-buckets", text: `Latency under the histogram's precision: ${latencyBuckets(t)}` },
    {
      name: "small-paths",
      text: `Regressions in a small share of the traffic: a path carrying under ${pct(errorsHidden)} of the requests can fail every one of them and keep the error ratio under ${pct(t.errorRate)}, and a path carrying under ${pct(slowHidden)} can be arbitrarily slow and keep the p95 under ${ms(t.p95Seconds)}.`,
    },
    {
      name: "no-traffic",
      text: `A candidate that receives no requests reads an error ratio of 0 (the query's \`or vector(0)\`, which keeps a healthy version's empty numerator from being an Error); its p95 is then no data, an Error measurement retried after 10 s, and ${errorLimit + 1} in a row end the analysis in Error, which aborts.`,
    },
    {
      name: "subtle-regression",
      text: subtle
        ? `A subtle regression: ${subtleText(input, subtle)}`
        : "A subtle regression at half the SLO's error rate was not simulated.",
    },
    {
      name: "false-rollback",
      text: `A good version is rolled back with a chance of at most ${pct(falseRollbackBound(chosen))} (each of the ${2 * chosen.weights.length} metric analyses fails it with at most ${LOOK_ALPHA} per look, ${chosen.count} look${chosen.count === 1 ? "" : "s"}, failureLimit ${chosen.failureLimit}).`,
    },
    {
      name: "unseen",
      text: "What no look reads: wrong answers served with a 2xx status, regressions that appear after the rollout (a leak, a cache that fills, a nightly job) or only under all of the traffic, and anything in a metric the template does not query. The analysis reads the candidate's own requests against fixed conditions; it does not compare it with the stable version.",
    },
  ];
}
