/**
 * What a rollout costs to run on AWS, from the counts of a simulation, at the published on-demand
 * prices of us-east-1. The prices are kept in this one table with the date they were read; change
 * them here (and the date) when AWS changes them.
 */
export const PRICES = {
  asOf: "2024-11-01",
  region: "us-east-1",
  /** Step Functions Standard: $0.025 per 1,000 state transitions. */
  stateTransition: 0.025 / 1_000,
  /** Step Functions Express: $1.00 per million requests (executions started). */
  expressRequest: 1 / 1_000_000,
  /**
   * Step Functions Express: $0.00001667 per GB-second (the first 1,000 hours' tier), each
   * execution's duration rounded up to 100 ms, its memory billed in 64 MB chunks.
   */
  expressGbSecond: 0.00001667,
  /** Lambda: $0.20 per million requests. */
  lambdaRequest: 0.2 / 1_000_000,
  /** Lambda on ARM64 (the construct's architecture, infra/functions.ts): $0.0000133334 per GB-second. */
  lambdaGbSecond: 0.0000133334,
  /** DynamoDB on-demand: $0.625 per million write request units (since 2024-11-01). */
  dynamoWriteUnit: 0.625 / 1_000_000,
  /** DynamoDB on-demand: $0.125 per million read request units (since 2024-11-01). */
  dynamoReadUnit: 0.125 / 1_000_000,
  /** EventBridge Scheduler: $1.00 per million invocations. */
  schedulerInvocation: 1 / 1_000_000,
  /** A self-hosted Prometheus bills nothing per query (AMP bills query samples, not counted here). */
  prometheusQuery: 0,
} as const;

/** The construct's Lambda memory (infra/functions.ts; its functions run on ARM64). */
export const LAMBDA_MEMORY_MB = 512;

/**
 * What an Express execution of the ticker is billed for in memory: its first 64 MB chunk (the
 * chunk holds the definition and the data of a few-kilobyte `{seconds, payload}`).
 */
export const EXPRESS_MEMORY_MB = 64;
/** Express bills an execution's duration rounded up to this many milliseconds. */
export const EXPRESS_BILLING_STEP_MS = 100;

/** Billable work of one rollout, counted by the simulation. */
export interface CostCounts {
  /** State transitions of the rollout's state machine. */
  rolloutTransitions: number;
  /** State transitions of other Standard state machines (none: the ticker is Express). */
  tickerTransitions: number;
  /** Executions of the ticker, an Express state machine (the Timer below a minute). */
  tickerExecutions: number;
  /** Their billed duration: each execution's, rounded up to 100 ms. */
  tickerBilledMs: number;
  lambdaInvocations: number;
  /** Lambda time, each invocation rounded up to a millisecond, as billed (measured in-process). */
  lambdaMs: number;
  /** Analysis ticks: the measurements' rounds. */
  ticks: number;
  dynamoReadUnits: number;
  dynamoWriteUnits: number;
  schedulerInvocations: number;
  providerQueries: number;
}

/** Dollars, by item and in total. */
export function costOf(c: CostCounts): { total: number; items: Record<string, number> } {
  const items = {
    stepFunctions:
      (c.rolloutTransitions + c.tickerTransitions) * PRICES.stateTransition +
      c.tickerExecutions * PRICES.expressRequest +
      (c.tickerBilledMs / 1000) * (EXPRESS_MEMORY_MB / 1024) * PRICES.expressGbSecond,
    lambda:
      c.lambdaInvocations * PRICES.lambdaRequest +
      (c.lambdaMs / 1000) * (LAMBDA_MEMORY_MB / 1024) * PRICES.lambdaGbSecond,
    dynamodb: c.dynamoReadUnits * PRICES.dynamoReadUnit + c.dynamoWriteUnits * PRICES.dynamoWriteUnit,
    scheduler: c.schedulerInvocations * PRICES.schedulerInvocation,
    queries: c.providerQueries * PRICES.prometheusQuery,
  };
  return { total: Object.values(items).reduce((a, b) => a + b, 0), items };
}

/**
 * The same analysis in a Wait-loop design, where each round of measurements is a chain of states in
 * the rollout's own execution (Wait → measure Task → Choice) instead of a task-token wait answered
 * by the Timer: the rollout's transitions plus three per tick, no ticker and no Scheduler, the same
 * Lambda work and the same writes.
 */
export function waitLoopCost(c: CostCounts): { total: number; items: Record<string, number> } {
  return costOf({
    ...c,
    rolloutTransitions: c.rolloutTransitions + 3 * c.ticks,
    tickerTransitions: 0,
    tickerExecutions: 0,
    tickerBilledMs: 0,
    schedulerInvocations: 0,
  });
}

/** `$0.0012` with enough digits to see a rollout's cost. */
export function formatDollars(amount: number): string {
  if (amount === 0) return "$0";
  const digits = Math.max(2, 1 - Math.floor(Math.log10(Math.abs(amount))) + 1);
  return `$${amount.toFixed(Math.min(8, digits))}`;
}
