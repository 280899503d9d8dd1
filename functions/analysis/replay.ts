import { RolloutsError } from "../../statemachine/errors.ts";
import type { Metric } from "../../statemachine/spec.ts";
import { kayentaPhase } from "../metrics/kayenta.ts";
import { evaluateResult } from "./evaluate.ts";
import { decisionFigures, JudgeChain, type JudgeDecisionFigures } from "./replay-judge.ts";
import type { Measurement, MeasurementPhase } from "./types.ts";

/**
 * Replay: a recorded run's measurements re-decided by the current conditions, or by changed ones,
 * so a gate can be tuned on real history before it decides a rollout. Pure: the caller reads the
 * run and its measurements from the store and prints the rows.
 *
 * What is replayed is what a measurement keeps: a plain metric's result (its `value`, the JSON
 * the provider answered, `[0.5]` for a vector) goes through the metric's success and failure
 * conditions again. A provider that failed (an Error without a value) has nothing to re-decide:
 * it stays an Error. A judge's look keeps the readings the judge decided on (`readings`, within
 * the measurement's bound): its looks are decided again in order by the judge of the run or of
 * the template, carrying its state from look to look (`replay-judge.ts`). A look without its
 * readings (recorded before they were kept, or cut to fit) is listed with its recorded decision,
 * `replayed` null and `note` saying why, and so is every later look of that judge.
 */
export interface RecordedMeasurement {
  metric: string;
  measurement: Measurement;
}

export interface ReplayRow {
  metric: string;
  /** 1 for the metric's first recorded measurement. */
  index: number;
  at: string;
  value?: string;
  recorded: MeasurementPhase;
  /** Null when the measurement cannot be re-decided (a judge's look). */
  replayed: MeasurementPhase | null;
  /** The replayed verdict's message (an Error names the condition), or why it was not replayed. */
  note?: string;
  differs: boolean;
  /** A judge's look: the recorded decision's figures, and the replayed one's when it was decided again. */
  judge?: { recorded: JudgeDecisionFigures; replayed?: JudgeDecisionFigures };
}

export interface ReplaySummary {
  measurements: number;
  replayed: number;
  differ: number;
  /** The earliest measurement (by time) whose decision changes. */
  firstChange?: ReplayRow;
}

/** A template given for the replay names a metric the run never measured. */
export class ReplayInputError extends RolloutsError {
  override readonly name = "ReplayInputError";
}

/**
 * The metrics to replay with: the run's own, each replaced by the one of `changed` with its name.
 * A changed metric the run does not have is refused (a typo would otherwise replay nothing).
 */
export function replayMetrics(recorded: readonly Metric[], changed?: readonly Metric[]): Metric[] {
  if (!changed) return [...recorded];
  const names = new Set(recorded.map((m) => m.name));
  const unknown = changed.filter((m) => !names.has(m.name)).map((m) => m.name);
  if (unknown.length > 0) {
    throw new ReplayInputError(
      `the template's metric(s) ${unknown.map((n) => `"${n}"`).join(", ")} are not in the recorded run (it measured ${[...names].map((n) => `"${n}"`).join(", ")})`,
    );
  }
  const byName = new Map(changed.map((m) => [m.name, m]));
  return recorded.map((m) => byName.get(m.name) ?? m);
}

/** A measurement's value as the conditions read it: JSON when it parses, the text otherwise. */
export function resultOf(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

function replayOne(
  metric: Metric | undefined,
  m: Measurement,
): Pick<ReplayRow, "replayed" | "note"> & { figures?: JudgeDecisionFigures } {
  if (m.judge || m.readings || m.truncated?.readings !== undefined) {
    // A judge's look with a metric that is not a judge (anymore): nothing decides it the same way.
    return {
      replayed: null,
      note: metric
        ? "a judge's look, and the metric is not a judge: not re-decided"
        : "the metric is not in the run's definition",
    };
  }
  if (!metric) return { replayed: null, note: "the metric is not in the run's definition" };
  if (m.truncated?.value !== undefined) {
    return { replayed: null, note: "the value was cut to fit the store: not re-decided" };
  }
  if (m.value === undefined) {
    // The provider failed or answered nothing: no result to put through the conditions.
    return { replayed: m.phase, ...(m.message ? { note: m.message } : {}) };
  }
  const kayenta = metric.provider.kayenta;
  // Kayenta's score is judged against the thresholds, not the conditions.
  if (kayenta) return { replayed: kayentaPhase(Number(m.value), kayenta.threshold) };
  // Decided again at the time it was taken: now() in a condition is the measurement's time.
  const verdict = evaluateResult(resultOf(m.value), metric, undefined, { now: new Date(m.startedAt) });
  return { replayed: verdict.phase, ...(verdict.message ? { note: verdict.message } : {}) };
}

/** Every recorded measurement beside its replayed decision, in the order they were taken. */
export function replayMeasurements(
  metrics: readonly Metric[],
  measurements: readonly RecordedMeasurement[],
  /** The run's own metrics, when `metrics` replaces some: a judge must read what the run read. */
  recorded: readonly Metric[] = metrics,
): ReplayRow[] {
  const byName = new Map(metrics.map((m) => [m.name, m]));
  const recordedByName = new Map(recorded.map((m) => [m.name, m]));
  const counts = new Map<string, number>();
  const chains = new Map<string, JudgeChain>();
  const chainOf = (metric: Metric | undefined): JudgeChain | undefined => {
    const spec = metric?.provider.judge;
    if (!metric || !spec) return undefined;
    let chain = chains.get(metric.name);
    if (!chain) {
      chain = new JudgeChain(metric, spec, recordedByName.get(metric.name)?.provider.judge);
      chains.set(metric.name, chain);
    }
    return chain;
  };
  const ordered = measurements
    .map((r, i) => ({ r, i }))
    .sort((a, b) => a.r.measurement.finishedAt.localeCompare(b.r.measurement.finishedAt) || a.i - b.i);
  return ordered.map(({ r }) => {
    const index = (counts.get(r.metric) ?? 0) + 1;
    counts.set(r.metric, index);
    const metric = byName.get(r.metric);
    const chain = chainOf(metric);
    const { replayed, note, figures } = chain ? chain.next(r.measurement) : replayOne(metric, r.measurement);
    const recordedFigures = r.measurement.judge;
    return {
      metric: r.metric,
      index,
      at: r.measurement.finishedAt,
      ...(r.measurement.value !== undefined ? { value: r.measurement.value } : {}),
      recorded: r.measurement.phase,
      replayed,
      ...(note ? { note } : {}),
      differs: replayed !== null && replayed !== r.measurement.phase,
      ...(recordedFigures
        ? {
            judge: {
              recorded: decisionFigures(recordedFigures),
              ...(figures ? { replayed: figures } : {}),
            },
          }
        : {}),
    };
  });
}

export function summarize(rows: readonly ReplayRow[]): ReplaySummary {
  const changed = rows.filter((r) => r.differs);
  return {
    measurements: rows.length,
    replayed: rows.filter((r) => r.replayed !== null).length,
    differ: changed.length,
    ...(changed[0] ? { firstChange: changed[0] } : {}),
  };
}

/** The summary line: `3 of 12 decisions differ; first at error-rate #4 (2026-…): Successful → Failed`. */
export function summaryLine(s: ReplaySummary): string {
  const skipped = s.measurements - s.replayed;
  const tail = skipped > 0 ? ` (${skipped} not re-decided)` : "";
  if (!s.firstChange) return `0 of ${s.replayed} decisions differ${tail}`;
  const f = s.firstChange;
  return `${s.differ} of ${s.replayed} decisions differ${tail}; first at ${f.metric} #${f.index} (${f.at}): ${f.recorded} → ${f.replayed}`;
}
