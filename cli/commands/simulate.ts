import type { Command } from "commander";
import { formatDollars } from "../../local/simulate/cost.ts";
import { PlanError, parsePlan, type ShortStep } from "../../local/simulate/plan.ts";
import type { SimulationRow } from "../../local/simulate/run.ts";
import { SimulationInputError } from "../../local/simulate/spec-files.ts";
import { formatDuration, parseDuration } from "../../statemachine/index.ts";
import { Exit, type RegisterCommand, UsageError } from "../io.ts";
import { number, rate, rps } from "../numbers.ts";
import { columns } from "../table.ts";
import { printable, printableJson } from "../terminal.ts";

interface SimulateOptions {
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
 * `rollouts simulate ROLLOUT_FILE TEMPLATE_FILE... [--plan STEPS]...`: how many requests a bad
 * version would reach, one row per plan, measured on the real workflow in virtual time.
 */
export const registerSimulate: RegisterCommand = (program: Command, io, done) => {
  program
    .command("simulate")
    .description(
      "run the rollout in virtual time against a bad version and count the requests it reaches (one row per --plan)",
    )
    .argument("<file...>", "the Rollout file and its AnalysisTemplate files, or a native spec")
    .option("--rps <r>", "requests per second in front of the rollout", rps("--rps"), 100)
    .option("--error-rate <e>", "share of the new version's requests that fail", rate("--error-rate"), 0.3)
    .option(
      "--baseline-error-rate <e>",
      "share of the old version's requests that fail",
      rate("--baseline-error-rate"),
      0,
    )
    .option(
      "--latency-factor <f>",
      "the new version's latency over the old one's",
      number("--latency-factor", (n) => n > 0 && n <= 1000, "a number in (0, 1000]"),
      1,
    )
    .option(
      "--plan <steps>",
      "steps replacing the rollout's own (canary, Argo or native), e.g. 25%,analysis,50%,pause=2s,analysis (repeatable)",
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .option(
      "--replicas <n>",
      "whole pods behind one Service (Argo's rounding) instead of an exact traffic router",
      number(
        "--replicas",
        (n) => Number.isInteger(n) && n >= 1 && n <= 1000,
        "a whole number from 1 to 1000",
      ),
    )
    .option(
      "--ready-delay <s>",
      "seconds a new pod takes to serve (with --replicas)",
      number("--ready-delay", (n) => n >= 0 && n <= 3600, "seconds from 0 to 3600"),
      0,
    )
    .option("--duration <d>", "virtual time from the push until a person notices", "5m")
    .option(
      "--seed <n>",
      "seed of the simulated errors and latencies",
      number(
        "--seed",
        (n) => Number.isInteger(n) && n >= 0 && n <= 2 ** 32 - 1,
        "a whole number from 0 to 4294967295",
      ),
      0,
    )
    .option("--json", "print the rows as JSON, with the per-second series")
    .action(async (files: string[], opts: SimulateOptions) => {
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
        throw new UsageError(
          "--ready-delay needs --replicas (with a traffic router weights are exact at once)",
        );
      }
      const simulate = await loadSimulation();
      if (simulate instanceof Error) {
        io.err(printable(`rollouts: ${simulate.message}`));
        return done(Exit.badInput);
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
          return done(Exit.badInput);
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
        return done(Exit.ok);
      }
      io.out(printable(renderRows(rows).join("\n"), { multiline: true }));
      done(Exit.ok);
    });
};

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
