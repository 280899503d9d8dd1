import type { ProviderResult } from "../../functions/metrics/port.ts";
import { PrometheusMetricProvider } from "../../functions/metrics/prometheus.ts";
import { RolloutsError } from "../../statemachine/errors.ts";
import {
  type Finding,
  type LiveAnswer,
  type LiveValues,
  liveFindings,
  liveProbes,
  queriesOf,
  type ReviewSubject,
} from "../../statemachine/review/index.ts";
import { MetricSchema } from "../../statemachine/spec.ts";

/**
 * `rollouts review --prometheus URL`: the review's live half. Each query of the rollout runs once
 * against that Prometheus through the analysis's own Prometheus client (`functions/metrics`), and
 * each of its selectors again counted by the labels that name a version; what the answers mean is
 * decided by the domain (`statemachine/review/live.ts`). The metrics' own addresses, headers and
 * signing are not used: the URL given is the Prometheus asked.
 */

/** The Prometheus given does not answer at all: the command cannot review against it (exit 5). */
export class PrometheusUnavailableError extends RolloutsError {
  override readonly name = "PrometheusUnavailableError";
}

/** Seconds one query may take. */
const TIMEOUT_SECONDS = 10;

function answerOf(r: ProviderResult): LiveAnswer {
  if (!r.ok) return { ok: false, message: r.message };
  const values = Array.isArray(r.result)
    ? (r.result as number[])
    : typeof r.result === "number"
      ? [r.result]
      : [];
  return { ok: true, values, series: (r.series ?? []).map((s) => s.labels) };
}

/** Runs every query of the rollout once against `url`; findings for what the answers show. */
export async function liveReview(
  url: string,
  subject: ReviewSubject,
  values: LiveValues,
  provider = new PrometheusMetricProvider(),
): Promise<Finding[]> {
  const ask = async (query: string) =>
    answerOf(
      await provider.measure(
        MetricSchema.parse({
          name: "review",
          provider: { prometheus: { address: url, query, timeout: TIMEOUT_SECONDS } },
        }),
        { now: new Date() },
      ),
    );
  const ping = await ask("vector(1)");
  if (!ping.ok)
    throw new PrometheusUnavailableError(`Prometheus at ${url} did not answer a query: ${ping.message}`);
  const { probes, skipped } = liveProbes(subject, queriesOf(subject), values);
  const out: Finding[] = [...skipped];
  for (const probe of probes) {
    const main = await ask(probe.query);
    const grouped: LiveAnswer[] = [];
    if (main.ok) for (const g of probe.groups) grouped.push(await ask(g.query));
    out.push(...liveFindings(probe, main, grouped));
  }
  return out;
}
