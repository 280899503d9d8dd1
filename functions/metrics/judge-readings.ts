import { compileExpression, type Expression } from "../../statemachine/conditions.ts";
import type { JudgeSide, JudgeSpec, Metric, Reading } from "../../statemachine/spec.ts";
import type { MeasureContext, MetricProvider, ProviderResult } from "./port.ts";

/**
 * The judge's reader: one look at both versions. Every reading of the judge (the candidate's and
 * the stable version's `bad` and `n`, or `value`, and those of each metric of a score) is a call to
 * an ordinary provider with the `{{judge.*}}` placeholders filled in for this look, and an
 * expression over its answer. Identical calls are made once, all of them in parallel. The reader
 * only reads: what the values mean, and what to decide, is the analysis's judge
 * (`functions/analysis/judge-look.ts`). A reading that fails is data too — the judge holds on it.
 */

/** What one reading gave: the expression's value (and a Prometheus vector's labelled samples), or why not. */
export type ReadingValue =
  | { ok: true; value: unknown; series?: Array<{ labels: Record<string, string>; value: number }> }
  | { ok: false; message: string };

/**
 * Every reading of a look, keyed `candidate.bad`, `stable.value`, and `<metric>/candidate.value` for
 * a score's metrics: the `result` of a judge metric's measurement.
 */
export type JudgeReadings = Record<string, ReadingValue>;

/** The readings a judge takes, with their keys. */
export function readingsOf(spec: JudgeSpec): Array<{ key: string; reading: Reading }> {
  const out: Array<{ key: string; reading: Reading }> = [];
  const add = (prefix: string, sides: { candidate?: JudgeSide; stable?: JudgeSide }) => {
    for (const which of ["candidate", "stable"] as const) {
      for (const [name, reading] of Object.entries(sides[which] ?? {})) {
        out.push({ key: `${prefix}${which}.${name}`, reading });
      }
    }
  };
  if (spec.test === "score") for (const m of spec.metrics) add(`${m.name}/`, m.check);
  else if (spec.test === "kayenta") for (const m of spec.metrics) add(`${m.name}/`, m);
  else add("", spec);
  return out;
}

const expressions = new Map<string, Expression>();
function expression(text: string): Expression {
  let e = expressions.get(text);
  if (!e) {
    e = compileExpression(text);
    expressions.set(text, e);
  }
  return e;
}

/** `95s`: a Prometheus range of at least one second. */
function promDuration(seconds: number): string {
  return `${Math.max(1, Math.round(seconds))}s`;
}

/** Fills `{{judge.*}}` for this look, JSON-escaped like every substituted value. */
function fillPlaceholders(reading: Reading, ctx: MeasureContext): Reading["provider"] {
  const started = ctx.startedAt ?? ctx.now;
  const elapsed = Math.max(0, (ctx.now.getTime() - started.getTime()) / 1000);
  const values: Record<string, string> = {
    "{{judge.elapsed}}": promDuration(elapsed),
    "{{judge.elapsedSeconds}}": String(Math.max(1, Math.round(elapsed))),
    "{{judge.since}}": started.toISOString(),
    "{{judge.now}}": ctx.now.toISOString(),
  };
  const text = JSON.stringify(reading.provider).replace(/\{\{\s*judge\.([A-Za-z]+)\s*\}\}/g, (whole) => {
    const key = whole.replace(/\s+/g, "");
    const value = values[key];
    return value === undefined ? whole : JSON.stringify(value).slice(1, -1);
  });
  const provider = JSON.parse(text) as Reading["provider"];
  if (reading.sinceStart && provider.cloudWatch) {
    provider.cloudWatch = { ...provider.cloudWatch, interval: Math.max(60, Math.round(elapsed)) };
  }
  return provider;
}

/** The judge provider: reads both versions for one look through the process's other providers. */
export class JudgeMetricProvider implements MetricProvider {
  constructor(private readonly providers: MetricProvider) {}

  async measure(metric: Metric, ctx: MeasureContext): Promise<ProviderResult> {
    const spec = metric.provider.judge;
    if (!spec) return { ok: false, message: `metric "${metric.name}" has no judge` };
    const readings = readingsOf(spec);
    const calls = new Map<string, Promise<ProviderResult>>();
    const answers = await Promise.all(
      readings.map(({ key, reading }) => {
        const provider = fillPlaceholders(reading, ctx);
        const callKey = JSON.stringify(provider);
        let call = calls.get(callKey);
        if (!call) {
          call = this.call({ ...metric, name: `${metric.name}/${key}`, provider }, ctx);
          calls.set(callKey, call);
        }
        return call.then((answer) => evaluate(answer, reading.expression, ctx.now));
      }),
    );
    const result: JudgeReadings = {};
    readings.forEach(({ key }, i) => {
      result[key] = answers[i] as ReadingValue;
    });
    return { ok: true, result, value: "" };
  }

  private async call(metric: Metric, ctx: MeasureContext): Promise<ProviderResult> {
    try {
      const answer = await this.providers.measure(metric, ctx);
      // A reading is one call: a provider that answers later (Kayenta) is refused when loaded.
      if (answer.ok === "running")
        return { ok: false, message: "the provider's measurement is still running" };
      return answer;
    } catch (error) {
      return { ok: false, message: error instanceof Error ? error.message : String(error) };
    }
  }
}

function evaluate(answer: ProviderResult, text: string | undefined, now: Date): ReadingValue {
  if (!answer.ok) return { ok: false, message: answer.message };
  if (text === undefined) {
    return { ok: true, value: answer.result, ...(answer.series ? { series: answer.series } : {}) };
  }
  try {
    return { ok: true, value: expression(text).value(answer.result, answer.resultType, { now }) };
  } catch (error) {
    return { ok: false, message: `could not evaluate "${text}": ${(error as Error).message}` };
  }
}
