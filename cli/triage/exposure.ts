import type { RolloutEvent } from "../../functions/store/schema.ts";
import type { ExecutionFacts } from "./executions.ts";
import type { Exposure, TimelineEntry, WeightSpan } from "./model.ts";

/**
 * The execution's timeline and the candidate's exposure, both from its item events: every event a
 * workflow step writes carries the weight its write left, so the events are the weight's history.
 * Pure.
 */

export interface Traffic {
  /** Requests per second the service takes (all versions). */
  rps?: number;
  /** The share of the candidate's requests that fail. */
  errorRate?: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

const alike = (a: RolloutEvent, b: RolloutEvent) =>
  a.type === b.type && a.step === b.step && a.message === b.message && a.weight === b.weight;

/** The events in order, each run of alike events (same type, step, message, weight) folded into one line. */
export function timelineOf(events: readonly RolloutEvent[]): TimelineEntry[] {
  const start = events[0]?.at ?? 0;
  const out: Array<TimelineEntry & { last: RolloutEvent }> = [];
  for (const event of events) {
    const previous = out.at(-1);
    if (previous && alike(previous.last, event)) {
      previous.count++;
      previous.lastAt = iso(event.at);
      previous.last = event;
      continue;
    }
    out.push({
      at: iso(event.at),
      offsetSeconds: (event.at - start) / 1000,
      type: event.type,
      step: event.step ?? null,
      weight: event.weight ?? null,
      message: event.message,
      count: 1,
      lastAt: null,
      last: event,
    });
  }
  return out.map(({ last: _last, ...entry }) => entry);
}

/** When the execution's exposure as a candidate ends: its end, or now while it runs. */
function endOf(facts: ExecutionFacts, now: number): number {
  if (facts.end) return facts.end.at;
  if (facts.outcome === "running" || facts.outcome === "none") return now;
  return facts.events.at(-1)?.at ?? now;
}

/** The candidate's weight from its first event to `end`, one span per weight (spans of no time left out). */
export function weightSpans(events: readonly RolloutEvent[], end: number): WeightSpan[] {
  const changes: Array<{ at: number; weight: number }> = [];
  let weight = 0;
  const first = events[0]?.at;
  if (first === undefined) return [];
  changes.push({ at: first, weight });
  for (const event of events) {
    if (event.weight === undefined || event.weight === weight || event.at > end) continue;
    weight = event.weight;
    changes.push({ at: event.at, weight });
  }
  const spans: WeightSpan[] = [];
  changes.forEach((change, i) => {
    const until = Math.max(change.at, changes[i + 1]?.at ?? end);
    if (until === change.at) return;
    spans.push({
      from: iso(change.at),
      until: iso(until),
      weight: change.weight,
      seconds: (until - change.at) / 1000,
    });
  });
  return spans;
}

const round = (n: number) => Math.round(n);

/** The requests the candidate served (× `rps`) and how many failed (× `errorRate`); null without them. */
function counted(seconds: number, traffic: Traffic) {
  const requests = traffic.rps === undefined ? null : traffic.rps * seconds;
  return {
    requests: requests === null ? null : round(requests),
    badRequests:
      requests === null || traffic.errorRate === undefined ? null : round(requests * traffic.errorRate),
  };
}

export function exposureOf(facts: ExecutionFacts, now: number, traffic: Traffic = {}): Exposure {
  const end = endOf(facts, now);
  const spans = weightSpans(facts.events, end);
  const fullTrafficSeconds = spans.reduce((sum, s) => sum + (s.weight / 100) * s.seconds, 0);
  const seconds = spans.reduce((sum, s) => sum + s.seconds, 0);
  const until = facts.servingUntil === "now" ? now : facts.servingUntil;
  const afterPromotion =
    facts.outcome === "promoted" && facts.end && until !== null && until >= facts.end.at
      ? {
          from: iso(facts.end.at),
          until: iso(until),
          seconds: (until - facts.end.at) / 1000,
          ...counted((until - facts.end.at) / 1000, traffic),
        }
      : null;
  return {
    spans,
    seconds,
    fullTrafficSeconds,
    rps: traffic.rps ?? null,
    errorRate: traffic.errorRate ?? null,
    ...counted(fullTrafficSeconds, traffic),
    afterPromotion,
  };
}
