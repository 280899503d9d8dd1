import { type AnalysisRun, createRun, nextTickAt, tick } from "../../../functions/analysis/index.ts";
import type { MetricProvider, ProviderResult } from "../../../functions/metrics/port.ts";
import {
  type AnalysisSpec,
  type Metric,
  type MetricInput,
  MetricSchema,
} from "../../../statemachine/spec.ts";

/** S, F, I, E: a measurement scripted to end Successful, Failed, Inconclusive or Error. */
export type Outcome = "S" | "F" | "I" | "E";

export const T0 = new Date("2026-01-01T00:00:00.000Z");

/** A metric whose success band is >= 0.9 and failure band < 0.5 (0.7 is Inconclusive). */
export function metric(overrides: Partial<MetricInput> = {}): Metric {
  return MetricSchema.parse({
    name: "success-rate",
    successCondition: "result[0] >= 0.9",
    failureCondition: "result[0] < 0.5",
    provider: { web: { url: "http://127.0.0.1:1/unused" } },
    ...overrides,
  });
}

export function spec(...metrics: Metric[]): Pick<AnalysisSpec, "templates"> {
  return { templates: [{ name: "t", kind: "AnalysisTemplate", metrics }] };
}

const VALUES: Record<Exclude<Outcome, "E">, number> = { S: 1, F: 0, I: 0.7 };

/** A provider that answers each metric from its own script, then repeats "S". */
export function scriptedProvider(scripts: Record<string, Outcome[]>): MetricProvider & { calls: string[] } {
  const cursor: Record<string, number> = {};
  const calls: string[] = [];
  return {
    calls,
    async measure(m): Promise<ProviderResult> {
      calls.push(m.name);
      const i = cursor[m.name] ?? 0;
      cursor[m.name] = i + 1;
      const outcome = scripts[m.name]?.[i] ?? "S";
      if (outcome === "E") return { ok: false, message: "connection refused" };
      const v = VALUES[outcome];
      return { ok: true, result: [v], value: `[${v}]` };
    },
  };
}

/**
 * Drives a run in virtual time: jumps to each `nextTickAt` and ticks, until the run completes or
 * `maxTicks` ticks have happened.
 */
export async function drive(
  run: AnalysisRun,
  provider: MetricProvider,
  maxTicks = 100,
): Promise<{ run: AnalysisRun; times: number[] }> {
  let current = run;
  const times: number[] = [];
  for (let i = 0; i < maxTicks; i++) {
    const at = nextTickAt(current);
    if (!at) break;
    times.push((at.getTime() - T0.getTime()) / 1000);
    current = await tick(current, at, provider);
  }
  return { run: current, times };
}

export async function runScript(
  m: Metric,
  outcomes: Outcome[],
  maxTicks = outcomes.length,
): Promise<AnalysisRun> {
  const provider = scriptedProvider({ [m.name]: outcomes });
  return (await drive(createRun(spec(m), T0), provider, maxTicks)).run;
}
