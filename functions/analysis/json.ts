import type { AnalysisRun } from "./types.ts";

/** The `--json` shape of `rollouts analyze`: an AnalysisRun status reduced to what a script reads. */
export interface ArgoRunJson {
  phase: string;
  message: string;
  metricResults: Array<{
    name: string;
    phase: string;
    message: string;
    count: number;
    successful: number;
    failed: number;
    inconclusive: number;
    error: number;
    consecutiveError: number;
    measurements: Array<{
      phase: string;
      value: string;
      startedAt: string;
      finishedAt: string;
      message: string;
    }>;
  }>;
}

/**
 * The run as Argo's `status` reads, with every key present (empty strings rather than Argo's
 * omitted fields) so scripts can index without guards.
 */
export function toArgoJson(run: AnalysisRun): ArgoRunJson {
  return {
    phase: run.phase,
    message: run.message ?? "",
    metricResults: run.metricResults.map((r) => ({
      name: r.name,
      phase: r.phase,
      message: r.message ?? "",
      count: r.count,
      successful: r.successful,
      failed: r.failed,
      inconclusive: r.inconclusive,
      error: r.error,
      consecutiveError: r.consecutiveError,
      measurements: r.measurements.map((m) => ({
        phase: m.phase,
        value: m.value ?? "",
        startedAt: m.startedAt,
        finishedAt: m.finishedAt,
        message: m.message ?? "",
      })),
    })),
  };
}
