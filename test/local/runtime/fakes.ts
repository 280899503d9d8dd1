import { CreateScheduleCommand, SchedulerClient } from "@aws-sdk/client-scheduler";
import { SendTaskSuccessCommand, SFNClient } from "@aws-sdk/client-sfn";
import { functionSubstitutions } from "@sfn-rollouts/test-support/embedded-rollout";
import type { ManualClock } from "../../../functions/clock.ts";
import { atExpression } from "../../../functions/timer/scheduler.ts";
import { localFunctionArn } from "../../../local/asl/intrinsics.ts";
import type { RuntimeFunction } from "../../../local/runtime.ts";
import { compile, loadRollout } from "../../../statemachine/index.ts";

/** The reference canary, compiled as the construct does (no readiness checks: a Lambda target). */
export async function canaryDefinition(): Promise<Record<string, unknown>> {
  const { spec } = await loadRollout(["examples/rollout.yaml", "examples/analysis-success-rate.yaml"]);
  return compile(spec) as unknown as Record<string, unknown>;
}

/** `definitionSubstitutions` pointing every placeholder at the fake function of that role. */
export const substitutions = functionSubstitutions;

/** What the fakes saw, for assertions. */
export interface FakeLog {
  calls: Array<{ fn: string; event: Record<string, unknown>; env: string | undefined }>;
  /** Tokens handed to analysis runs, in order. */
  analysisTokens: string[];
  /** Tokens handed to approvals (pauses without a duration, Inconclusive). */
  approvalTokens: string[];
}

export interface FakeOptions {
  clock: ManualClock;
  /** Begin reports the first revision (the workflow skips the steps). */
  firstRevision?: boolean;
  /** Begin throws an error of this name on its first call. */
  beginThrowsOnce?: string;
}

/**
 * Small stand-ins for the real handlers: each returns the JSON the compiled workflow reads, records
 * its call (with `ROLLOUTS_TABLE` as it saw it in `process.env`), and the pause goes through the
 * real Scheduler and SFN SDK clients on the façade, as the real `await`/`resume` handlers will.
 */
export function fakeFunctions(options: FakeOptions): {
  functions: Record<string, RuntimeFunction>;
  log: FakeLog;
} {
  const log: FakeLog = { calls: [], analysisTokens: [], approvalTokens: [] };
  let beginCalls = 0;
  const record = (fn: string, event: unknown) =>
    log.calls.push({ fn, event: event as Record<string, unknown>, env: process.env.ROLLOUTS_TABLE });
  const env = { ROLLOUTS_TABLE: "rollouts-local" };
  const functions: Record<string, RuntimeFunction> = {
    begin: {
      env,
      handler: async (event) => {
        record("begin", event);
        beginCalls++;
        if (beginCalls === 1 && options.beginThrowsOnce !== undefined) {
          const error = new Error("the service hiccuped");
          error.name = options.beginThrowsOnce;
          throw error;
        }
        return { context: { revision: 2 }, firstRevision: options.firstRevision ?? false };
      },
    },
    setWeight: {
      env,
      handler: async (event) => {
        record("setWeight", event);
        const step = (event as { step: { weight: number } }).step;
        return { weight: step.weight, drift: false };
      },
    },
    checkReady: { env, handler: async () => ({ ready: true }) },
    startAnalysis: {
      env,
      handler: async (event) => {
        record("startAnalysis", event);
        log.analysisTokens.push((event as { taskToken: string }).taskToken);
        return { runId: `run-${log.analysisTokens.length}` };
      },
    },
    await: {
      env,
      handler: async (event) => {
        record("await", event);
        const { taskToken, step } = event as { taskToken: string; step: { kind: string; duration?: number } };
        if (step.duration === undefined) {
          log.approvalTokens.push(taskToken);
          return { waiting: "approval" };
        }
        // A timed pause: a one-time schedule that fires `resume` with the token.
        const scheduler = new SchedulerClient({});
        const at = options.clock.now() + step.duration * 1000;
        await scheduler.send(
          new CreateScheduleCommand({
            Name: `pause-${log.calls.length}`,
            GroupName: "rollouts",
            ScheduleExpression: atExpression(at),
            ScheduleExpressionTimezone: "UTC",
            FlexibleTimeWindow: { Mode: "OFF" },
            ActionAfterCompletion: "DELETE",
            Target: {
              Arn: localFunctionArn("resume"),
              RoleArn: "arn:aws:iam::000000000000:role/scheduler",
              Input: JSON.stringify({ taskToken }),
            },
          }),
        );
        return { waiting: "timer", at };
      },
    },
    resume: {
      env,
      handler: async (event) => {
        record("resume", event);
        const sfn = new SFNClient({});
        await sfn.send(
          new SendTaskSuccessCommand({
            taskToken: (event as { taskToken: string }).taskToken,
            output: JSON.stringify({ resumed: true, at: options.clock.now() }),
          }),
        );
        return { resumed: true };
      },
    },
    promote: {
      env,
      handler: async (event) => {
        record("promote", event);
        return { phase: "Healthy", table: process.env.ROLLOUTS_TABLE };
      },
    },
    abort: {
      env,
      handler: async (event) => {
        record("abort", event);
        return { phase: "Degraded", error: (event as { error: unknown }).error };
      },
    },
  };
  return { functions, log };
}

/** SDK client settings for the façade (outside any handler: explicit endpoint and dummy keys). */
export function clientConfig(endpoint: string) {
  return {
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  };
}
