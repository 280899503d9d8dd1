import type { JudgeSpec, Metric } from "../../statemachine/spec.ts";
import { type JudgeReadings, readingsOf } from "../metrics/judge-readings.ts";
import type { ProviderResult } from "../metrics/port.ts";
import { boundJudgeState } from "./bounds.ts";
import { judgeMeasurement } from "./run.ts";
import type { GateFigures, JudgeState, Measurement, MeasurementPhase, RecordedReadings } from "./types.ts";

/**
 * A judge's looks decided again, in order, over the readings each look recorded: each look goes
 * through `judgeMeasurement`, the function the analysis takes its looks with, with the state the
 * previous replayed look left (a sequential test's always-valid p-value so far) and the look's
 * place in the analysis (`final` from the metric's `count`). Pure.
 */

/** The figures a row shows for one decision of a judge. */
export interface JudgeDecisionFigures {
  verdict: string;
  pValue: number | null;
  bayesFactor: number | null;
}

/** One judge look replayed: the new phase and figures, or why it was not decided again. */
export interface JudgeReplay {
  replayed: MeasurementPhase | null;
  note?: string;
  figures?: JudgeDecisionFigures;
}

export function decisionFigures(figures: GateFigures): JudgeDecisionFigures {
  return { verdict: figures.verdict, pValue: figures.pValue, bayesFactor: figures.bayesFactor };
}

/** The readings as the judge took them: a sample JSON kept as null was not a finite number. */
function takenReadings(values: Extract<RecordedReadings, { ok: true }>["values"]): JudgeReadings {
  const out: JudgeReadings = {};
  for (const [key, v] of Object.entries(values)) {
    out[key] =
      v.ok && v.series
        ? { ...v, series: v.series.map((s) => ({ labels: s.labels, value: s.value ?? Number.NaN })) }
        : (v as JudgeReadings[string]);
  }
  return out;
}

/** The replay of one judge metric's looks: call {@link JudgeChain.next} with each, oldest first. */
export class JudgeChain {
  #state: JudgeState | undefined;
  /** Looks that reached a verdict or held so far: what `final` is computed from. */
  #counted = 0;
  /** The first look that could not be decided again: every later one depends on it. */
  #broken: number | undefined;

  /** The readings the replayed judge takes that the recorded one took otherwise: none can be replayed. */
  readonly #changed: string[];

  /** `recorded`: the judge the run measured with, when known; its readings must be the replayed one's. */
  constructor(
    private readonly metric: Metric,
    private readonly spec: JudgeSpec,
    recorded?: JudgeSpec,
  ) {
    const before = new Map(
      (recorded ? readingsOf(recorded) : []).map((r) => [r.key, JSON.stringify(r.reading)]),
    );
    this.#changed = readingsOf(spec)
      .filter((r) => before.has(r.key) && before.get(r.key) !== JSON.stringify(r.reading))
      .map((r) => r.key);
  }

  next(m: Measurement): JudgeReplay {
    // A look the store refused is an Error without figures: it took no look, as in the analysis.
    if (!m.judge && m.phase === "Error" && m.readings === undefined && !m.truncated?.judge) {
      return { replayed: "Error", ...(m.message ? { note: m.message } : {}) };
    }
    const index = this.#counted + 1;
    this.#counted = index;
    if (this.#broken !== undefined) {
      return {
        replayed: null,
        note: `look #${this.#broken} could not be decided again, and a judge decides each look on the ones before: not re-decided`,
      };
    }
    const why = this.#unreplayable(m, index);
    if (why) {
      this.#broken = index;
      return { replayed: null, note: `${why}: not re-decided` };
    }
    const answer: ProviderResult =
      m.readings?.ok === true
        ? { ok: true, result: takenReadings(m.readings.values), value: "" }
        : { ok: false, message: m.readings?.ok === false ? m.readings.message : "" };
    const out = judgeMeasurement(this.metric, this.spec, answer, this.#state, index - 1, m.finishedAt);
    // The state goes on as the analysis stores it between looks.
    this.#state = boundJudgeState(out.judge);
    const figures = out.measurement.judge;
    return {
      replayed: out.measurement.phase,
      ...(out.measurement.message ? { note: out.measurement.message } : {}),
      ...(figures ? { figures: decisionFigures(figures) } : {}),
    };
  }

  /** Why this look cannot be decided again, or undefined. */
  #unreplayable(m: Measurement, index: number): string | undefined {
    if (this.#changed.length > 0) {
      return `the judge reads ${this.#changed.map((k) => `"${k}"`).join(", ")} otherwise than the run did (its query or expression changed)`;
    }
    if (m.truncated?.readings !== undefined) {
      return `the readings were cut to fit the store (${m.truncated.readings.toLocaleString("en-US")} bytes)`;
    }
    if (!m.readings) return "the look was recorded without its readings";
    if (m.judge && m.judge.look !== index) {
      return `the record lacks look #${index} (this is look #${m.judge.look})`;
    }
    if (m.readings.ok) {
      const recorded = m.readings.values;
      const missing = readingsOf(this.spec)
        .map((r) => r.key)
        .filter((key) => !Object.hasOwn(recorded, key));
      if (missing.length > 0) {
        return `the look has no reading ${missing.map((k) => `"${k}"`).join(", ")} (it read ${
          Object.keys(recorded)
            .map((k) => `"${k}"`)
            .join(", ") || "nothing"
        })`;
      }
    }
    return undefined;
  }
}
