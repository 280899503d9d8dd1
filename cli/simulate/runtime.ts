import type { HandlerName } from "../../functions/config.ts";
import { RolloutsError } from "../../statemachine/errors.ts";
import type { CostCounts } from "./cost.ts";
import type { ShortStep } from "./plan.ts";

/**
 * What `rollouts simulate` needs of the embedded runtime, and how it finds it. The runtime is a
 * package of its own, `@sfn-rollouts/local` (the Step Functions interpreter, the local AWS
 * services, the proxy): an optional peer of this one, installed by those who simulate. It
 * implements this contract; nothing here imports it.
 */
export const RUNTIME_PACKAGE = "@sfn-rollouts/local";

/** The runtime's entry point for simulations (`@sfn-rollouts/local/simulate`). */
export interface SimulationRuntime {
  simulate(options: SimulationOptions): Promise<SimulationRow[]>;
}

/** Files a simulation cannot run, each problem on a line: the CLI's exit 2. */
export class SimulationInputError extends RolloutsError {
  override name = "SimulationInputError";
}

export interface SimulationOptions {
  /** Rollout and AnalysisTemplate files. */
  readonly files: readonly string[];
  /** Plans to run, one row each; absent = the rollout's own steps. */
  readonly plans?: ReadonlyArray<readonly ShortStep[] | undefined>;
  readonly rps: number;
  /** Share of the candidate's requests that fail. */
  readonly errorRate: number;
  /** Share of the stable version's requests that fail. */
  readonly baselineErrorRate?: number;
  /** The candidate's latency over the stable's (1 = the same). */
  readonly latencyFactor?: number;
  /** Whole pods behind one Service (Argo's rounding); absent = an exact traffic router. */
  readonly replicas?: number;
  /** Seconds a new pod takes to serve (with `replicas`). */
  readonly readyDelay?: number;
  /** Virtual seconds from the candidate's push to the end (the time until a person notices). */
  readonly durationSeconds?: number;
  readonly seed?: number;
  /** Keep the per-second series in the result (the `--json` output). */
  readonly series?: boolean;
  /**
   * End a plan at its promotion instead of at `durationSeconds` (an abort always ends it): for runs
   * that count outcomes, not the requests a promoted version serves afterwards.
   */
  readonly untilDecided?: boolean;
}

/** One virtual second of traffic. */
export interface SecondRecord {
  /** Seconds since the candidate's push (this second is [t, t + 1)). */
  t: number;
  /** The proxy's weight for the candidate (100 once promoted). */
  weight: number;
  /** The share the candidate really received (pods when `replicas`). */
  share: number;
  newRequests: number;
  newErrors: number;
  oldRequests: number;
  oldErrors: number;
}

/** Billable work of the candidate's rollout, counted as it ran, and the Lambdas by name. */
export interface RunCounts extends CostCounts {
  byHandler: Partial<Record<HandlerName, number>>;
}

export interface SimulationRow {
  /** The short form of the plan, or the rollout's own steps written in it. */
  plan: string;
  outcome: "promoted" | "aborted" | "paused" | "running";
  /** Virtual seconds from the push to the decision (null while running at the end). */
  at: number | null;
  /** What decided an abort (Argo's message). */
  message: string | null;
  newRequests: number;
  newErrors: number;
  totalRequests: number;
  /** newRequests / totalRequests over the rows' time (to the decision for an abort). */
  share: number;
  counts: RunCounts;
  /** Dollars at the published on-demand prices (`cost.ts`), and the same analysis as a Wait loop. */
  cost: { total: number; waitLoop: number };
  series?: SecondRecord[];
}

/**
 * Loads the runtime, or says in one line which package to install when it is not there. Only a
 * missing runtime package is turned into that line; any other failure to load it is rethrown.
 */
export async function loadSimulationRuntime(
  specifier = `${RUNTIME_PACKAGE}/simulate`,
): Promise<SimulationRuntime | Error> {
  try {
    return (await import(specifier)) as SimulationRuntime;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const missing = /Cannot find (?:package|module) '([^']+)'/.exec((error as Error).message)?.[1];
    if (code !== "ERR_MODULE_NOT_FOUND" || missing === undefined || !isRuntime(missing, specifier)) {
      throw error;
    }
    return new Error(
      `simulate runs the workflow in the embedded runtime, which is the package ${RUNTIME_PACKAGE}: install it beside sfn-rollouts with \`npm i -D ${RUNTIME_PACKAGE}\``,
    );
  }
}

/** The missing module is the runtime package itself (Node names it by name or by its path). */
function isRuntime(missing: string, specifier: string): boolean {
  const name = specifier.startsWith("@")
    ? specifier.split("/").slice(0, 2).join("/")
    : specifier.split("/")[0];
  return missing === name || missing === specifier || missing.includes(`/node_modules/${name}/`);
}
