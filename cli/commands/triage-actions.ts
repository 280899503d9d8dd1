import { SFNClient } from "@aws-sdk/client-sfn";
import { clientConfig } from "../../functions/aws-clients.ts";
import type { Clock } from "../../functions/clock.ts";
import type { OperateDeps } from "../../functions/workflow/operate.ts";
import type { AwsOptions } from "../aws.ts";
import { Exit } from "../exit-codes.ts";
import { type Io, UsageError } from "../io.ts";
import type { RolloutView } from "../render.ts";
import { printable, printableJson } from "../terminal.ts";
import { diagnose } from "../triage/diagnose.ts";
import { executionFacts, UnknownRevisionError } from "../triage/executions.ts";
import type { Traffic } from "../triage/exposure.ts";
import type { TriageReport } from "../triage/model.ts";
import { renderTriage } from "../triage/render.ts";
import { type ExecutionReader, SfnExecutionReader } from "../triage/sfn.ts";
import { type CommonOptions, currentRunsView, loadView, withAws } from "./operate-actions.ts";

/**
 * `rollouts triage NAME`: reads what `rollouts get --json` reads (the whole item, the rollout's
 * runs, the stored measurements of the execution's runs) through the same loaders, asks Step
 * Functions how the execution stands, and prints the diagnosis (`cli/triage/`). Exit 0 when the
 * report is printed, whatever it says; 2 for input it cannot use (an unknown rollout or revision);
 * 5 when the table cannot be read.
 */

export interface TriageCommandOptions extends CommonOptions {
  revision?: number;
  rps?: number;
  errorRate?: number;
  json?: boolean;
  env?: AwsOptions["env"];
  /** The time the report is made at (tests); default the CLI's clock. */
  clock?: Clock;
  /** How the execution is read from Step Functions (tests); default the SDK client. */
  executions?: ExecutionReader;
}

/** Measurements read per metric of an earlier execution's runs: more than the report shows, bounded. */
const EARLIER_MEASUREMENTS = 200;

export function triageAction(io: Io, name: string, options: TriageCommandOptions): Promise<number> {
  if (options.errorRate !== undefined && options.rps === undefined) {
    throw new UsageError("--error-rate needs --rps: the exposure in requests is rps × weight × time");
  }
  return withAws(io, options, async (deps) => {
    const sfn = options.executions ? undefined : new SFNClient(clientConfig(options.env ?? process.env));
    try {
      const report = await triageReport(deps, name, {
        ...(options.revision === undefined ? {} : { revision: options.revision }),
        traffic: trafficOf(options),
        executions: options.executions ?? new SfnExecutionReader(sfn as SFNClient),
        clock: options.clock ?? deps.clock,
      });
      io.out(options.json ? printableJson(report, 2) : renderTriage(report));
      return Exit.ok;
    } catch (error) {
      if (!(error instanceof UnknownRevisionError)) throw error;
      io.err(printable(`rollouts: ${error.message}`));
      return Exit.badInput;
    } finally {
      sfn?.destroy();
    }
  });
}

function trafficOf(options: TriageCommandOptions): Traffic {
  return {
    ...(options.rps === undefined ? {} : { rps: options.rps }),
    ...(options.errorRate === undefined ? {} : { errorRate: options.errorRate }),
  };
}

/**
 * The report on `name`'s current execution, or on its execution of `revision`: the whole view
 * (`loadView`), and for an earlier execution the measurements of its runs (`currentRunsView` on
 * the item as that execution left it), then Step Functions' word on it, then the diagnosis.
 */
export async function triageReport(
  deps: Pick<OperateDeps, "store">,
  name: string,
  options: { revision?: number; traffic?: Traffic; executions: ExecutionReader; clock: Clock },
): Promise<TriageReport> {
  const whole = await loadView(deps, name, { whole: true });
  const facts = executionFacts(whole, options.revision);
  let view: RolloutView = whole;
  if (!facts.current && facts.arn !== null) {
    const earlier = await currentRunsView(
      deps,
      { ...whole.item, executionArn: facts.arn },
      EARLIER_MEASUREMENTS,
    );
    view = { ...whole, measurements: earlier.measurements };
  }
  const execution = facts.arn === null ? null : await options.executions.read(facts.arn);
  return diagnose({
    view,
    now: options.clock.now(),
    ...(options.revision === undefined ? {} : { revision: options.revision }),
    execution,
    ...(options.traffic ? { traffic: options.traffic } : {}),
  });
}
