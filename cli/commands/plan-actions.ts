import { formatDuration } from "../../statemachine/duration.ts";
import { type Exposure, exposures } from "../../statemachine/exposure.ts";
import { type PlanStep, plan } from "../../statemachine/index.ts";
import { LIMIT_MESSAGES, MAX_REPLICAS } from "../../statemachine/limits.ts";
import { Exit, type Io, UsageError } from "../io.ts";
import { columns } from "../table.ts";
import { printable, printableJson } from "../terminal.ts";
import { compileOrReport } from "./definition-check.ts";
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
  // What `rollouts compile` would refuse (the definition's size, Step Functions' quotas), refused here.
  if (!compileOrReport(spec, files, io)) return Exit.badInput;
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
  if (result.steps.length === 0) {
    io.out(
      "no steps: the candidate is promoted once it is ready (Argo's rolling update: a canary without steps)",
    );
  }
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
