import { formatDollars } from "../../local/simulate/cost.ts";
import { PlanError, parsePlan, type ShortStep } from "../../local/simulate/plan.ts";
import type { SimulationRow } from "../../local/simulate/run.ts";
import { SimulationInputError } from "../../local/simulate/spec-files.ts";
import { formatDuration, parseDuration } from "../../statemachine/index.ts";
import { Exit, type Io, UsageError } from "../io.ts";
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
  const simulate = await loadSimulation();
  if (simulate instanceof Error) {
    io.err(printable(`rollouts: ${simulate.message}`));
    return Exit.badInput;
  }
  let rows: SimulationRow[];
  try {
    rows = await simulate({
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

/**
 * The simulation runs the synthesized stack in the embedded runtime, so it loads the CDK, dynalite
 * and the Step Functions interpreter: only this command pays for them, when it runs. An installed
 * package has those two as optional peer dependencies; without them this is one line saying what
 * to install, not a stack trace.
 */
async function loadSimulation(): Promise<typeof import("../../local/simulate/run.ts").simulate | Error> {
  try {
    return (await import("../../local/simulate/run.ts")).simulate;
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === "ERR_MODULE_NOT_FOUND";
    const name = /Cannot find (?:package|module) '([^']+)'/.exec((error as Error).message)?.[1];
    if (!missing || name === undefined) throw error;
    return new Error(
      `simulate runs the embedded runtime, which needs ${name}: install the simulation's packages with \`npm i -D dynalite@4 aws-local-stepfunctions@3\``,
    );
  }
}
