import type { MetricProvider, ProviderResult } from "../../functions/metrics/port.ts";

/** A provider answering each metric from its script (numbers, or `"E"` for a failed query), then 1. */
export class ScriptedProvider implements MetricProvider {
  readonly calls: Array<{ metric: string; at: number }> = [];
  readonly #cursor = new Map<string, number>();

  constructor(readonly scripts: Record<string, Array<number | "E">> = {}) {}

  async measure(metric: { name: string }, ctx: { now: Date }): Promise<ProviderResult> {
    this.calls.push({ metric: metric.name, at: ctx.now.getTime() });
    const i = this.#cursor.get(metric.name) ?? 0;
    this.#cursor.set(metric.name, i + 1);
    const v = this.scripts[metric.name]?.[i] ?? 1;
    if (v === "E") return { ok: false, message: "connection refused" };
    return { ok: true, result: [v], value: `[${v}]` };
  }
}
