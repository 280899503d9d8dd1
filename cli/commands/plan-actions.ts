import { formatDuration } from "../../statemachine/duration.ts";
import { type PlanStep, plan, type RolloutSpec } from "../../statemachine/index.ts";
import { LIMIT_MESSAGES, MAX_REPLICAS } from "../../statemachine/limits.ts";
import { Exit, type Io, UsageError } from "../io.ts";
import { columns } from "../table.ts";
import { printable, printableJson } from "../terminal.ts";
import { loadSpecOrReport } from "./spec-input.ts";

export interface PlanOptions {
  replicas?: number;
  rps?: number;
  errorRate?: number;
  json?: boolean;
}

/**
 * The action of `rollouts plan`, apart from its registration so that the spec loader and the
 * planner load only when it runs. Resolves to the exit code; input it cannot use throws a
 * {@link UsageError}.
 */
export async function planAction(io: Io, files: string[], opts: PlanOptions): Promise<number> {
  const spec = await loadSpecOrReport(files, io);
  if (!spec) return Exit.badInput;
  if (opts.replicas !== undefined && !Number.isInteger(opts.replicas)) {
    throw new UsageError(`--replicas must be a whole number, got ${opts.replicas}`);
  }
  if (opts.replicas !== undefined && opts.replicas > MAX_REPLICAS) {
    throw new UsageError(`--replicas ${LIMIT_MESSAGES.replicas}`);
  }
  if (opts.errorRate !== undefined && (opts.errorRate > 1 || opts.rps === undefined)) {
    throw new UsageError(
      opts.rps === undefined
        ? "--error-rate needs --rps (the exposure is requests)"
        : `--error-rate must be a share between 0 and 1, got ${opts.errorRate}`,
    );
  }
  const result = plan(opts.replicas === undefined ? spec : { ...spec, replicas: opts.replicas }, {
    ...(opts.rps !== undefined ? { rps: opts.rps } : {}),
  });
  const exposure =
    opts.rps !== undefined && opts.errorRate !== undefined
      ? exposures(spec, result.steps, opts.rps, opts.errorRate)
      : undefined;
  if (opts.json) {
    io.out(
      printableJson(
        exposure
          ? {
              ...result,
              steps: result.steps.map((s, i) => ({
                ...s,
                ...(exposure[i] ? { exposure: exposure[i] } : {}),
              })),
            }
          : result,
        2,
      ),
    );
    return Exit.ok;
  }
  io.out(
    `rollout ${result.name} (revision ${result.revision}): ${result.strategy}, ${result.replicas} replicas, ${
      result.trafficRouting ? "exact weights (traffic router)" : "whole pods behind one Service"
    }`,
  );
  // Details quote the files (queries, names): printed without their control characters.
  io.out(printable(table(result.steps, opts.rps !== undefined, exposure), { multiline: true }));
  if (result.backgroundAnalysis) {
    io.out(`background analysis from step ${result.backgroundAnalysis.startingStep}:`);
    for (const line of result.backgroundAnalysis.analysis) io.out(printable(`    ${line}`));
  }
  if (result.waves) {
    io.out(
      `waves (onFailure ${result.waves.onFailure}): each target runs every step above, one target after the other`,
    );
    for (const line of result.waves.waves) io.out(printable(`  ${line}`));
  }
  for (const line of result.guards ?? []) io.out(printable(line));
  for (const line of result.errorBudget ?? []) io.out(printable(line));
  return Exit.ok;
}

/** What a bad version meets if this step's analysis is the one that stops it, as early as it can. */
export interface Exposure {
  /** Seconds from the start of the step to the earliest abort. */
  abortAfter: number;
  /** Seconds from the push to it, every earlier step passed as a bad version would pass it. */
  at: number;
  /** Requests the candidate has served by then, and of them failed (× the error rate). */
  requests: number;
  failed: number;
}

/**
 * The exposure arithmetic: a bad version at share s behind r requests per second is aborted no
 * earlier than its analysis' first failing measurement allows, initialDelay + failureLimit
 * intervals (the failureLimit + 1-th failure; a judge at its first look), and has served r × s × t
 * by then, plus what every earlier step served in full (pauses, analyses it passed). An analysis
 * that cannot fail (failureLimit beyond its count) stops nothing; after an indefinite pause or an
 * analysis without an end, nothing later is reached without a person.
 */
export function exposures(
  spec: RolloutSpec,
  steps: readonly PlanStep[],
  rps: number,
  errorRate: number,
): Array<Exposure | undefined> {
  let elapsed = 0;
  let served = 0;
  let reachable = true;
  return spec.steps.map((step, i) => {
    const share = (steps[i]?.share ?? 0) / 100;
    if (!reachable) return undefined;
    if (step.kind === "pause") {
      if (step.duration === undefined) reachable = false;
      else {
        elapsed += step.duration;
        served += rps * share * step.duration;
      }
      return undefined;
    }
    if (step.kind !== "analysis") return undefined;
    const metrics = step.analysis.templates.flatMap((t) => t.metrics);
    const earliest = metrics
      .map((m) => {
        const interval = m.interval ?? 0;
        if (m.provider.judge) return m.initialDelay;
        if (m.failureLimit < 0 || (m.count !== undefined && m.count > 0 && m.failureLimit + 1 > m.count))
          return undefined;
        return m.initialDelay + m.failureLimit * interval;
      })
      .filter((t): t is number => t !== undefined);
    const lengths = metrics.map((m) =>
      m.count === undefined && m.interval !== undefined
        ? Number.POSITIVE_INFINITY
        : m.initialDelay + Math.max(0, (m.count ?? 1) - 1) * (m.interval ?? 0),
    );
    const length = Math.max(0, ...lengths);
    let out: Exposure | undefined;
    if (earliest.length > 0) {
      const abortAfter = Math.min(...earliest);
      const requests = Math.round(served + rps * share * abortAfter);
      out = { abortAfter, at: elapsed + abortAfter, requests, failed: Math.round(requests * errorRate) };
    }
    if (!Number.isFinite(length)) reachable = false;
    elapsed += length;
    served += rps * share * length;
    return out;
  });
}

function table(steps: PlanStep[], withRps: boolean, exposure?: Array<Exposure | undefined>): string {
  const header = ["#", "step", "weight", "canary", "stable", "share", ...(withRps ? ["rps"] : [])];
  const rows = steps.map((s) => [
    String(s.index),
    s.detail,
    `${s.weight}%`,
    String(s.canaryPods),
    String(s.stablePods),
    `${s.share}%`,
    ...(withRps ? [String(s.candidateRps ?? 0)] : []),
  ]);
  const [head = "", ...lines] = columns(header, rows);
  const out = [head];
  steps.forEach((s, i) => {
    out.push(lines[i] ?? "");
    for (const a of s.analysis ?? []) out.push(`    ${a}`);
    for (const g of s.gates ?? []) {
      if (g.samplesNeeded === undefined || g.secondsToSamples === undefined) continue;
      const time =
        g.secondsToSamples < 0 ? "never (no traffic)" : `in ${formatDuration(Math.ceil(g.secondsToSamples))}`;
      const last =
        g.lastLookSeconds === undefined ? "" : `; last look at ${formatDuration(g.lastLookSeconds)}`;
      const promote =
        g.promoteAtSamples === undefined || g.secondsToPromote === undefined
          ? ""
          : `, ${g.promoteAtSamples} to promote ${g.secondsToPromote < 0 ? "never (no traffic)" : `in ${formatDuration(Math.ceil(g.secondsToPromote))}`}`;
      out.push(
        `    ${g.metric}: ${g.samplesNeeded} samples${g.perSide ? " per side" : ""} ${time} at this share${promote}${last}`,
      );
    }
    const e = exposure?.[i];
    if (e) {
      out.push(
        `    a bad version is aborted no earlier than ${formatDuration(e.abortAfter)} into this step (${formatDuration(e.at)} after the push): ${e.requests} requests to it, ${e.failed} failed`,
      );
    }
    if (s.warning) out.push(`    warning: ${s.warning}`);
  });
  return out.join("\n");
}
