import { formatDuration, parseDuration } from "../../statemachine/duration.ts";
import { Exit, type Io, UsageError } from "../io.ts";
import { formatDollars } from "../simulate/cost.ts";
import { PlanError, parsePlan, type ShortStep } from "../simulate/plan.ts";
import { loadSimulationRuntime, SimulationInputError, type SimulationRow } from "../simulate/runtime.ts";
import { columns } from "../table.ts";
import { printable, printableJson } from "../terminal.ts";

export interface SimulateOptions {
  rps: number;
  errorRate: number;
  baselineErrorRate: number;
  latencyFactor: number;
  plan: string[];
  replicas?: number;
  readyDelay: number;
  duration: string;
  seed: number;
  json?: boolean;
}

/**
 * The action of `rollouts simulate`, apart from its registration so that the plan parser and the
 * spec loader load only when it runs (and the embedded runtime only once its input is accepted).
 * Resolves to the exit code.
 */
export async function simulateAction(io: Io, files: string[], opts: SimulateOptions): Promise<number> {
  const duration = parseDuration(opts.duration);
  if ("error" in duration) throw new UsageError(`--duration: ${duration.error}`);
  if (!Number.isInteger(duration.seconds) || duration.seconds < 1 || duration.seconds > 86_400) {
    throw new UsageError(`--duration must be whole seconds from 1s to 24h, got "${opts.duration}"`);
  }
  let plans: ShortStep[][];
  try {
    plans = opts.plan.map(parsePlan);
  } catch (error) {
    if (error instanceof PlanError) throw new UsageError(error.message);
    throw error;
  }
  if (opts.readyDelay > 0 && opts.replicas === undefined) {
    throw new UsageError("--ready-delay needs --replicas (with a traffic router weights are exact at once)");
  }
  // The runtime loads the CDK, dynalite and the Step Functions interpreter: only this command pays
  // for them, once its input is accepted.
  const runtime = await loadSimulationRuntime();
  if (runtime instanceof Error) {
    io.err(printable(`rollouts: ${runtime.message}`));
    return Exit.badInput;
  }
  let rows: SimulationRow[];
  try {
    rows = await runtime.simulate({
      files,
      plans,
      rps: opts.rps,
      errorRate: opts.errorRate,
      baselineErrorRate: opts.baselineErrorRate,
      latencyFactor: opts.latencyFactor,
      ...(opts.replicas !== undefined ? { replicas: opts.replicas } : {}),
      readyDelay: opts.readyDelay,
      durationSeconds: duration.seconds,
      seed: opts.seed,
      series: opts.json === true,
    });
  } catch (error) {
    if (error instanceof SimulationInputError) {
      for (const line of error.message.split("\n")) io.err(printable(line));
      return Exit.badInput;
    }
    throw error;
  }
  if (opts.json) {
    io.out(
      printableJson(
        {
          rps: opts.rps,
          errorRate: opts.errorRate,
          seed: opts.seed,
          durationSeconds: duration.seconds,
          rows,
        },
        2,
      ),
    );
    return Exit.ok;
  }
  io.out(printable(renderRows(rows).join("\n"), { multiline: true }));
  return Exit.ok;
}

/** `plan  outcome  at  new  errors  share`, the reference's columns, and what the rollout costs on AWS. */
export function renderRows(rows: readonly SimulationRow[]): string[] {
  return columns(
    ["plan", "outcome", "at", "new", "errors", "share", "cost"],
    rows.map((r) => [
      r.plan,
      r.outcome,
      r.at === null ? "-" : formatDuration(r.at),
      r.newRequests.toLocaleString("en-US"),
      r.newErrors.toLocaleString("en-US"),
      `${(100 * r.share).toFixed(1)}%`,
      formatDollars(r.cost.total),
    ]),
  );
}
