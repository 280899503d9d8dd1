import type { AnalysisSpec, CarriedEvidence, Metric } from "../../statemachine/spec.ts";
import type { AnalysisRun } from "./types.ts";

/**
 * The evidence a sequential gate carries from the rollout's earlier analyses (`error-budget.ts`):
 * when an analysis starts, each of its sequential gates with earlier steps (`budget.carriedFrom`)
 * takes what the gate's last look in the latest of them left on its run (`judge.evidence`). The
 * runs are the same execution's (`runOf` reads them), so a new execution — a new revision, a
 * retry — starts every gate afresh; a step whose run is missing (a person skipped it) is passed
 * over for the one before.
 */
export async function withCarriedEvidence(
  analysis: AnalysisSpec,
  runOf: (stepIndex: number) => Promise<AnalysisRun | undefined>,
): Promise<AnalysisSpec> {
  const carry = async (metric: Metric): Promise<Metric> => {
    const judge = metric.provider.judge;
    if (judge?.test !== "sequential-rate" && judge?.test !== "sequential-latency") return metric;
    const gate = judge.budget?.gate;
    for (const step of [...(judge.budget?.carriedFrom ?? [])].reverse()) {
      const run = await runOf(step);
      const earlier = run?.metrics.find(
        (m) => m.provider.judge?.test === judge.test && m.provider.judge.budget?.gate === gate,
      );
      const evidence: CarriedEvidence | undefined = earlier
        ? run?.metricResults.find((r) => r.name === earlier.name)?.judge?.evidence
        : undefined;
      if (evidence)
        return { ...metric, provider: { ...metric.provider, judge: { ...judge, carried: evidence } } };
    }
    return metric;
  };
  const templates = [];
  for (const template of analysis.templates) {
    const metrics: Metric[] = [];
    for (const metric of template.metrics) metrics.push(await carry(metric));
    templates.push({ ...template, metrics });
  }
  return { ...analysis, templates };
}
