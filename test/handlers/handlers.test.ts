import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import {
  GetAliasCommand,
  GetFunctionConfigurationCommand,
  LambdaClient,
  PublishVersionCommand,
  UpdateAliasCommand,
  type UpdateAliasRequest,
  UpdateFunctionCodeCommand,
} from "@aws-sdk/client-lambda";
import { CreateScheduleCommand, SchedulerClient } from "@aws-sdk/client-scheduler";
import {
  ExecutionAlreadyExists,
  SendTaskFailureCommand,
  SendTaskSuccessCommand,
  SFNClient,
  StartExecutionCommand,
  TaskDoesNotExist,
} from "@aws-sdk/client-sfn";
import {
  createRolloutsTable,
  type DynaliteHarness,
  startDynalite,
} from "@sfn-rollouts/test-support/dynalite";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { requestAbort } from "../../functions/abort/request-abort.ts";
import { SfnTaskTokens } from "../../functions/abort/task-tokens.ts";
import { ManualClock } from "../../functions/clock.ts";
import { ENV } from "../../functions/config.ts";
import { createHandler as abortHandler } from "../../functions/handlers/abort.ts";
import { createHandler as awaitHandler } from "../../functions/handlers/await.ts";
import { createHandler as beginHandler } from "../../functions/handlers/begin.ts";
import { createHandler as checkReadyHandler } from "../../functions/handlers/check-ready.ts";
import { createHandler as promoteHandler } from "../../functions/handlers/promote.ts";
import { createHandler as resumeHandler } from "../../functions/handlers/resume.ts";
import { depsFromEnv } from "../../functions/handlers/root.ts";
import { createHandler as setWeightHandler } from "../../functions/handlers/set-weight.ts";
import { createHandler as startAnalysisHandler } from "../../functions/handlers/start-analysis.ts";
import { triggerDepsFromEnv, createHandler as triggerHandler } from "../../functions/handlers/trigger.ts";
import { DynamoRolloutStore } from "../../functions/store/dynamodb.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import type { TimerFiring } from "../../functions/timer/port.ts";
import type { TickerInput } from "../../functions/timer/ticker.ts";
import type { WorkflowDeps } from "../../functions/workflow/deps.ts";
import { RecordingMetricsSink } from "../../functions/workflow/metrics.ts";
import type { WorkflowContext } from "../../functions/workflow/payloads.ts";

const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);
const ACCOUNT = "123456789012";
const SM = `arn:aws:states:us-east-1:${ACCOUNT}:stateMachine:checkout-rollout`;
const TICKER = `arn:aws:states:us-east-1:${ACCOUNT}:stateMachine:rollouts-ticker`;
const RESUME = `arn:aws:lambda:us-east-1:${ACCOUNT}:function:rollouts-resume`;
const DIGEST = (n: number) => `sha256:${String(n).repeat(64).slice(0, 64)}`;
const TARGET = { type: "lambda-alias", functionName: "checkout", alias: "live" };
const ROLLOUT = (stepCount: number) => ({
  name: "checkout",
  revision: "74a0fb7474",
  strategy: "canary",
  stepCount,
});

const sfn = mockClient(SFNClient);
const scheduler = mockClient(SchedulerClient);
const eventbridge = mockClient(EventBridgeClient);
const lambda = mockClient(LambdaClient);

let dynalite: DynaliteHarness;
let env: NodeJS.ProcessEnv;
let clock: ManualClock;
let metrics: RecordingMetricsSink;
let started: Array<{ name: string; input: unknown; stateMachineArn: string }>;

/** A Lambda function with an alias, in memory, so the alias router's call sequences behave as on AWS. */
let fn: {
  alias: {
    FunctionVersion: string;
    RoutingConfig?: { AdditionalVersionWeights?: Record<string, number> };
    RevisionId: string;
  };
  latest: { CodeSha256: string; LastUpdateStatus: string; RevisionId: string };
  versions: Record<string, { CodeSha256: string; State: string }>;
  n: number;
};

function ecrPush(digest: string, tag: string, time: string, id = `event-${tag}`) {
  return {
    version: "0",
    id,
    "detail-type": "ECR Image Action",
    source: "aws.ecr",
    account: ACCOUNT,
    time,
    region: "us-east-1",
    resources: [],
    detail: {
      result: "SUCCESS",
      "repository-name": "checkout",
      "image-digest": digest,
      "action-type": "PUSH",
      "image-tag": tag,
    },
  };
}

beforeAll(async () => {
  dynalite = await startDynalite("rollouts-handlers");
});
afterAll(async () => {
  await dynalite.close();
});

beforeEach(async () => {
  sfn.reset();
  scheduler.reset();
  eventbridge.reset();
  lambda.reset();
  clock = new ManualClock(T0);
  metrics = new RecordingMetricsSink();
  started = [];
  const table = `rollouts-${Math.random().toString(36).slice(2, 10)}`;
  // Each test gets a fresh table on the shared dynalite.
  await createRolloutsTable(dynalite.client(), table);
  env = {
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: "test",
    AWS_SECRET_ACCESS_KEY: "test",
    AWS_ENDPOINT_URL_DYNAMODB: dynalite.endpoint,
    [ENV.tableName]: table,
    [ENV.scheduleGroup]: "rollouts",
    [ENV.schedulerRoleArn]: `arn:aws:iam::${ACCOUNT}:role/rollouts-scheduler`,
    [ENV.resumeFunctionArn]: RESUME,
    [ENV.tickerStateMachineArn]: TICKER,
    [ENV.eventBusName]: "rollouts-bus",
    [ENV.rollouts]: JSON.stringify([
      { rollout: "checkout", repository: "checkout", tags: ["v*"], stateMachineArn: SM },
    ]),
  };
  // The SDK clients read region, credentials and endpoints from the environment, as in a Lambda.
  Object.assign(process.env, env);

  const names = new Set<string>();
  sfn
    .on(StartExecutionCommand)
    .callsFake((input: { name: string; input: string; stateMachineArn: string }) => {
      if (names.has(`${input.stateMachineArn}/${input.name}`)) {
        throw new ExecutionAlreadyExists({ message: "Execution Already Exists", $metadata: {} });
      }
      names.add(`${input.stateMachineArn}/${input.name}`);
      started.push({
        name: input.name,
        input: JSON.parse(input.input),
        stateMachineArn: input.stateMachineArn,
      });
      return {
        executionArn: `${input.stateMachineArn.replace(":stateMachine:", ":execution:")}:${input.name}`,
        startDate: new Date(clock.now()),
      };
    });
  sfn.on(SendTaskSuccessCommand).resolves({});
  sfn.on(SendTaskFailureCommand).resolves({});
  scheduler.on(CreateScheduleCommand).resolves({ ScheduleArn: "arn:aws:scheduler:::schedule/rollouts/x" });
  eventbridge.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: "1" }] });

  fn = {
    alias: { FunctionVersion: "1", RevisionId: "a0" },
    latest: { CodeSha256: "sha-0", LastUpdateStatus: "Successful", RevisionId: "r0" },
    versions: { "1": { CodeSha256: "sha-0", State: "Active" } },
    n: 0,
  };
  lambda.on(GetAliasCommand).callsFake(() => structuredClone({ ...fn.alias, Name: "live" }));
  lambda.on(UpdateAliasCommand).callsFake((input: UpdateAliasRequest) => {
    if (input.RevisionId !== fn.alias.RevisionId) {
      throw Object.assign(new Error("revision id mismatch"), { name: "PreconditionFailedException" });
    }
    fn.alias = {
      FunctionVersion: input.FunctionVersion ?? fn.alias.FunctionVersion,
      RoutingConfig: input.RoutingConfig ?? fn.alias.RoutingConfig,
      RevisionId: `a${++fn.n}`,
    };
    return structuredClone(fn.alias);
  });
  lambda.on(UpdateFunctionCodeCommand).callsFake((input: { ImageUri?: string }) => {
    fn.latest = {
      CodeSha256: `sha-${input.ImageUri}`,
      LastUpdateStatus: "Successful",
      RevisionId: `r${++fn.n}`,
    };
    return { ...fn.latest, Version: "$LATEST" };
  });
  lambda
    .on(GetFunctionConfigurationCommand)
    .callsFake((input: { Qualifier?: string }) =>
      input.Qualifier
        ? { Version: input.Qualifier, ...fn.versions[input.Qualifier] }
        : { Version: "$LATEST", ...fn.latest },
    );
  lambda.on(PublishVersionCommand).callsFake((input: { CodeSha256?: string }) => {
    const existing = Object.entries(fn.versions).find(([, v]) => v.CodeSha256 === input.CodeSha256);
    if (existing) return { Version: existing[0], State: "Active" };
    const version = String(Object.keys(fn.versions).length + 1);
    fn.versions[version] = { CodeSha256: fn.latest.CodeSha256, State: "Active" };
    return { Version: version, State: "Active", CodeSha256: fn.latest.CodeSha256 };
  });
});

/** The real adapters from the environment, on a virtual clock; metrics recorded instead of logged. */
function deps(): () => WorkflowDeps {
  const built = { ...depsFromEnv(env, { clock }), metrics };
  return () => built;
}

function store(): DynamoRolloutStore {
  return new DynamoRolloutStore({
    client: dynalite.client(),
    tableName: env[ENV.tableName] as string,
    clock,
  });
}

async function rollout(): Promise<RolloutItem> {
  const found = await store().get("checkout");
  if (!found) throw new Error("no item");
  return found;
}

function trigger() {
  return triggerHandler(() => triggerDepsFromEnv(env, { clock }));
}

/** Trigger → Begin → CheckReady until ready: what the first states of an execution do. */
async function startExecution(digest: string, tag: string, time: string, stepCount: number) {
  const result = await trigger()(ecrPush(digest, tag, time));
  expect(result).toMatchObject({ kind: "handled", rollouts: [{ outcome: "started" }] });
  const execution = started.at(-1);
  if (!execution) throw new Error("nothing started");
  const executionId = `${SM.replace(":stateMachine:", ":execution:")}:${execution.name}`;
  const begun = (await beginHandler(deps())({
    input: execution.input,
    executionId,
    rollout: ROLLOUT(stepCount),
    target: TARGET,
  })) as { context: WorkflowContext; firstRevision: boolean };
  for (let i = 0; i < 5; i++) {
    const ready = await checkReadyHandler(deps())({
      context: begun.context,
      rollout: ROLLOUT(stepCount),
      stepIndex: null,
      target: TARGET,
    });
    if (ready.ready) break;
  }
  return begun;
}

const putEventTypes = () =>
  eventbridge
    .commandCalls(PutEventsCommand)
    .flatMap((c) => (c.args[0].input.Entries ?? []).map((e) => e.DetailType));

describe("a rollout through the handlers, on the real adapters", () => {
  it("the first revision: trigger starts it, Begin records it, Promote makes it stable", async () => {
    const begun = await startExecution(DIGEST(1), "v1", "2026-11-30T11:00:00Z", 2);
    expect(begun.firstRevision).toBe(true);
    expect(begun.context).toMatchObject({ rollout: "checkout", revision: 1, digest: DIGEST(1), tag: "v1" });
    expect(lambda.commandCalls(UpdateFunctionCodeCommand)[0]?.args[0].input).toMatchObject({
      FunctionName: "checkout",
      ImageUri: `${ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/checkout@${DIGEST(1)}`,
    });
    const out = await promoteHandler(deps())({
      context: begun.context,
      rollout: ROLLOUT(2),
      target: TARGET,
      scaleDownDelaySeconds: 30,
    });
    // The first revision had nothing stable before it: a release in waves has nothing to return it to.
    expect(out).toEqual({ phase: "Healthy", previous: null });
    expect(fn.alias).toMatchObject({ FunctionVersion: "2" });
    expect(await rollout()).toMatchObject({
      phase: "Healthy",
      weight: 100,
      stableRevision: { revision: 1, digest: DIGEST(1) },
    });
    expect(putEventTypes()).toEqual(["RolloutUpdated", "RolloutCompleted"]);
    const entry = eventbridge.commandCalls(PutEventsCommand)[1]?.args[0].input.Entries?.[0];
    expect(entry).toMatchObject({ Source: "sfn-rollouts", EventBusName: "rollouts-bus" });
    expect(JSON.parse(entry?.Detail ?? "{}")).toMatchObject({ rollout: "checkout", revision: 1 });
    // The 30 s scale-down goes to the ticker (under a minute).
    const ticker = sfn
      .commandCalls(StartExecutionCommand)
      .find((c) => c.args[0].input.stateMachineArn === TICKER);
    const input = JSON.parse(ticker?.args[0].input.input ?? "{}") as TickerInput;
    expect(input.seconds).toBe(30);
    expect(input.payload.payload).toMatchObject({ kind: "scale-down", rollout: "checkout" });
    expect(metrics.points.map((p) => p.name)).toEqual(["CanaryWeight", "RolloutsPromoted"]);
  });

  it("a second revision: weight, pauses on the ticker and on Scheduler, resumed by the Timer, token answered once", async () => {
    const first = await startExecution(DIGEST(1), "v1", "2026-11-30T11:00:00Z", 3);
    await promoteHandler(deps())({
      context: first.context,
      rollout: ROLLOUT(3),
      target: TARGET,
      scaleDownDelaySeconds: 0,
    });
    const { context } = await startExecution(DIGEST(2), "v2", "2026-11-30T11:05:00Z", 3);
    expect(context.revision).toBe(2);
    const body = { context, rollout: ROLLOUT(3), target: TARGET };

    const weighted = await setWeightHandler(deps())({
      ...body,
      stepIndex: 0,
      step: { kind: "setWeight", weight: 25 },
    });
    expect(weighted).toEqual({ drift: false, weight: 25, message: "weight 25%" });
    expect(fn.alias.RoutingConfig?.AdditionalVersionWeights).toEqual({ "3": 0.25 });

    // A 2 s pause: the ticker state machine.
    sfn.resetHistory();
    await awaitHandler(deps())({
      ...body,
      stepIndex: 1,
      step: { kind: "pause", duration: 2, reason: "CanaryPauseStep" },
      taskToken: "token-pause-2s",
    });
    const tick = sfn.commandCalls(StartExecutionCommand);
    expect(tick).toHaveLength(1);
    expect(tick[0]?.args[0].input.stateMachineArn).toBe(TICKER);
    const tickerInput = JSON.parse(tick[0]?.args[0].input.input ?? "{}") as TickerInput;
    expect(tickerInput).toMatchObject({
      seconds: 2,
      payload: { at: T0 + 2_000, payload: { kind: "pause", token: "token-pause-2s" } },
    });
    expect(scheduler.commandCalls(CreateScheduleCommand)).toHaveLength(0);
    expect(await rollout()).toMatchObject({
      phase: "Paused",
      waitingFor: "pause",
      currentTaskToken: "token-pause-2s",
    });

    // The ticker invokes resume: SendTaskSuccess with the token.
    clock.advance(2_000);
    const resumed = await resumeHandler(deps())(tickerInput.payload);
    expect(resumed).toEqual({ result: "pause ended" });
    const success = sfn.commandCalls(SendTaskSuccessCommand);
    expect(success.map((c) => c.args[0].input)).toEqual([
      { taskToken: "token-pause-2s", output: JSON.stringify({ outcome: "continue" }) },
    ]);
    expect(await rollout()).toMatchObject({ phase: "Progressing", currentTaskToken: null });
    // Delivered again (at least once): nothing is sent twice.
    expect(await resumeHandler(deps())(tickerInput.payload)).toEqual({ result: "pause already ended" });
    expect(sfn.commandCalls(SendTaskSuccessCommand)).toHaveLength(1);
    // Redelivered from the queue (Lambda's invocation record of a firing that failed every async
    // attempt), next to a message that is no such record: only that one goes back to the queue.
    const sqsMessage = (messageId: string, body: string) => ({
      messageId,
      receiptHandle: `${messageId}-1`,
      body,
      attributes: { ApproximateReceiveCount: "1" },
      messageAttributes: {},
      eventSource: "aws:sqs",
      eventSourceARN: `arn:aws:sqs:us-east-1:${ACCOUNT}:rollouts-timer-redelivery`,
      awsRegion: "us-east-1",
    });
    const record = {
      version: "1.0",
      requestContext: { condition: "RetriesExhausted", approximateInvokeCount: 3 },
      requestPayload: tickerInput.payload,
      responsePayload: { errorType: "StoreUnavailableError", errorMessage: "GetItem failed" },
    };
    expect(
      await resumeHandler(deps())({
        Records: [
          sqsMessage("m-record", JSON.stringify(record)),
          sqsMessage("m-other", JSON.stringify({ hello: "world" })),
          sqsMessage("m-text", "not json"),
        ],
      }),
    ).toEqual({ batchItemFailures: [{ itemIdentifier: "m-other" }, { itemIdentifier: "m-text" }] });
    expect(sfn.commandCalls(SendTaskSuccessCommand)).toHaveLength(1);

    // A 5 m pause: an EventBridge Scheduler one-time schedule.
    await awaitHandler(deps())({
      ...body,
      stepIndex: 2,
      step: { kind: "pause", duration: 300, reason: "CanaryPauseStep" },
      taskToken: "token-pause-5m",
    });
    const schedule = scheduler.commandCalls(CreateScheduleCommand)[0]?.args[0].input;
    expect(schedule).toMatchObject({
      GroupName: "rollouts",
      ScheduleExpression: `at(${new Date(clock.now() + 300_000).toISOString().slice(0, 19)})`,
      ScheduleExpressionTimezone: "UTC",
      ActionAfterCompletion: "DELETE",
      FlexibleTimeWindow: { Mode: "OFF" },
      Target: { Arn: RESUME, RoleArn: `arn:aws:iam::${ACCOUNT}:role/rollouts-scheduler` },
    });
    const firing = JSON.parse(schedule?.Target?.Input ?? "{}") as TimerFiring;
    expect(firing.payload).toMatchObject({ kind: "pause", token: "token-pause-5m" });

    // A token already used (Step Functions says the task does not exist): not a crash.
    sfn
      .on(SendTaskSuccessCommand)
      .rejects(new TaskDoesNotExist({ message: "Task does not exist", $metadata: {} }));
    clock.advance(300_000);
    expect(await resumeHandler(deps())(firing)).toEqual({ result: "pause token stale (TaskDoesNotExist)" });
    expect(await rollout()).toMatchObject({ currentTaskToken: null, pause: null });

    const promoted = await promoteHandler(deps())({ ...body, scaleDownDelaySeconds: 600 });
    // What a release in waves returns this rollout to with rollback-all: the revision stable before.
    expect(promoted).toEqual({
      phase: "Healthy",
      previous: expect.objectContaining({ digest: DIGEST(1) }),
    });
    expect(fn.alias).toMatchObject({ FunctionVersion: "3" });
    expect(await rollout()).toMatchObject({ phase: "Healthy", stableRevision: { revision: 2 } });
    expect(putEventTypes()).toEqual([
      "RolloutUpdated",
      "RolloutCompleted",
      "RolloutUpdated",
      "TrafficWeightUpdated",
      "RolloutStepCompleted",
      "RolloutPaused",
      "RolloutPaused",
      "RolloutCompleted",
    ]);
  });

  it("an analysis step: start-analysis schedules its first tick, a failed query is data, and an abort sends the token RolloutAborted", async () => {
    const first = await startExecution(DIGEST(1), "v1", "2026-11-30T11:00:00Z", 2);
    await promoteHandler(deps())({
      context: first.context,
      rollout: ROLLOUT(2),
      target: TARGET,
      scaleDownDelaySeconds: 0,
    });
    const { context } = await startExecution(DIGEST(2), "v2", "2026-11-30T11:05:00Z", 2);
    const body = { context, rollout: ROLLOUT(2), target: TARGET };
    const analysis = {
      templates: [
        {
          name: "success-rate",
          kind: "AnalysisTemplate",
          metrics: [
            {
              name: "success-rate",
              interval: 30,
              initialDelay: 120,
              count: 3,
              successCondition: "result >= 0.95",
              provider: { web: { url: "http://127.0.0.1:1/metrics", jsonPath: "$.rate" } },
            },
          ],
        },
      ],
    };
    const { runId } = await startAnalysisHandler(deps())({
      ...body,
      stepIndex: 0,
      step: { kind: "analysis", analysis },
      taskToken: "token-analysis",
    });
    const schedule = scheduler.commandCalls(CreateScheduleCommand).at(-1)?.args[0].input;
    expect(schedule?.ScheduleExpression).toBe(
      `at(${new Date(clock.now() + 120_000).toISOString().slice(0, 19)})`,
    );
    expect(JSON.parse(schedule?.Target?.Input ?? "{}")).toMatchObject({ payload: { kind: "tick", runId } });
    expect(await rollout()).toMatchObject({
      waitingFor: "analysis",
      currentTaskToken: "token-analysis",
      stepIndex: 0,
    });

    // The tick, as the Timer fires it (resume with the schedule's input): the provider is
    // unreachable, which is an Error measurement, not an exception.
    clock.advance(120_000);
    expect(await resumeHandler(deps())(JSON.parse(schedule?.Target?.Input ?? "{}"))).toEqual({
      result: `run ${runId}: Running`,
    });
    expect(metrics.points.filter((p) => p.name === "Measurements").map((p) => p.dimensions?.Phase)).toEqual([
      "Error",
    ]);
    // Argo retries an errored measurement 10 s later: the ticker.
    const retry = sfn.commandCalls(StartExecutionCommand).at(-1)?.args[0].input;
    expect(retry?.stateMachineArn).toBe(TICKER);
    expect((JSON.parse(retry?.input ?? "{}") as TickerInput).seconds).toBe(10);

    // rollouts abort: the token fails with RolloutAborted.
    const outcome = await requestAbort({
      store: store(),
      sfn: new SfnTaskTokens(new SFNClient({})),
      name: "checkout",
      reason: "error budget burnt",
      clock,
    });
    expect(outcome.status).toBe("signalled");
    expect(sfn.commandCalls(SendTaskFailureCommand).map((c) => c.args[0].input)).toEqual([
      { taskToken: "token-analysis", error: "RolloutAborted", cause: "error budget burnt" },
    ]);
    const aborted = await abortHandler(deps())({
      ...body,
      error: { Error: "RolloutAborted", Cause: "error budget burnt" },
      onFailure: "rollback",
      abortScaleDownDelaySeconds: 30,
    });
    expect(aborted).toEqual({
      phase: "Degraded",
      message: "RolloutAborted: Rollout aborted update to revision 2: error budget burnt",
    });
    expect(fn.alias).toMatchObject({ FunctionVersion: "2" });
    expect(fn.alias.RoutingConfig?.AdditionalVersionWeights ?? {}).toEqual({});
    expect(await rollout()).toMatchObject({ phase: "Degraded", weight: 0, abortRequested: false });
    expect(putEventTypes().at(-1)).toBe("RolloutAborted");
    // The next tick finds the run orphaned: it ends, and nothing is measured or answered.
    clock.advance(10_000);
    expect(await resumeHandler(deps())((JSON.parse(retry?.input ?? "{}") as TickerInput).payload)).toEqual({
      result: `run ${runId}: Successful`,
    });
    expect(sfn.commandCalls(SendTaskSuccessCommand)).toHaveLength(0);
  });

  it("abortRequested seen mid-step: the handler throws RolloutAborted", async () => {
    const first = await startExecution(DIGEST(1), "v1", "2026-11-30T11:00:00Z", 1);
    await promoteHandler(deps())({
      context: first.context,
      rollout: ROLLOUT(1),
      target: TARGET,
      scaleDownDelaySeconds: 0,
    });
    const { context } = await startExecution(DIGEST(2), "v2", "2026-11-30T11:05:00Z", 1);
    await requestAbort({
      store: store(),
      sfn: new SfnTaskTokens(new SFNClient({})),
      name: "checkout",
      reason: "stop",
      clock,
    });
    const updates = lambda.commandCalls(UpdateAliasCommand).length;
    await expect(
      setWeightHandler(deps())({
        context,
        rollout: ROLLOUT(1),
        target: TARGET,
        stepIndex: 0,
        step: { kind: "setWeight", weight: 10 },
      }),
    ).rejects.toMatchObject({ name: "RolloutAborted", message: "stop" });
    expect(lambda.commandCalls(UpdateAliasCommand)).toHaveLength(updates);
  });
});

describe("conditional writes on DynamoDB (dynalite)", () => {
  it("two Lambdas running one Begin concurrently record the execution once", async () => {
    const first = await startExecution(DIGEST(1), "v1", "2026-11-30T11:00:00Z", 1);
    await promoteHandler(deps())({
      context: first.context,
      rollout: ROLLOUT(1),
      target: TARGET,
      scaleDownDelaySeconds: 0,
    });
    await trigger()(ecrPush(DIGEST(2), "v2", "2026-11-30T11:05:00Z"));
    const execution = started.at(-1);
    const payload = {
      input: execution?.input,
      executionId: `${SM.replace(":stateMachine:", ":execution:")}:${execution?.name}`,
      rollout: ROLLOUT(1),
      target: TARGET,
    };
    const [a, b] = await Promise.all([beginHandler(deps())(payload), beginHandler(deps())(payload)]);
    expect(a.context).toEqual(b.context);
    const item = await rollout();
    expect(item.events.filter((e) => e.type === "RolloutUpdated")).toHaveLength(2);
    expect(item.currentRevision?.revision).toBe(2);
  });

  it("a Begin of an older push loses to the newer push the trigger accepted: ExecutionSuperseded", async () => {
    const first = await startExecution(DIGEST(1), "v1", "2026-11-30T11:00:00Z", 1);
    await promoteHandler(deps())({
      context: first.context,
      rollout: ROLLOUT(1),
      target: TARGET,
      scaleDownDelaySeconds: 0,
    });
    await trigger()(ecrPush(DIGEST(2), "v2", "2026-11-30T11:05:00Z"));
    const older = started.at(-1);
    await trigger()(ecrPush(DIGEST(3), "v3", "2026-11-30T11:06:00Z"));
    await expect(
      beginHandler(deps())({
        input: older?.input,
        executionId: `${SM.replace(":stateMachine:", ":execution:")}:${older?.name}`,
        rollout: ROLLOUT(1),
        target: TARGET,
      }),
    ).rejects.toMatchObject({ name: "ExecutionSuperseded" });
    expect((await rollout()).currentRevision?.revision).toBe(1);
  });
});

describe("the trigger handler", () => {
  it("a duplicate ECR event starts nothing new", async () => {
    const event = ecrPush(DIGEST(1), "v1", "2026-11-30T11:00:00Z");
    const one = await trigger()(event);
    const two = await trigger()(event);
    expect(one).toMatchObject({ rollouts: [{ outcome: "started" }] });
    // Begin has not recorded it yet, so the redelivery re-issues the same name: ExecutionAlreadyExists.
    expect(two).toMatchObject({ rollouts: [{ outcome: "duplicate" }] });
    expect(started).toHaveLength(1);
  });

  it("an out-of-order older push is ignored, the newer one wins", async () => {
    await trigger()(ecrPush(DIGEST(3), "v3", "2026-11-30T11:10:00Z"));
    const late = await trigger()(ecrPush(DIGEST(2), "v2", "2026-11-30T11:05:00Z"));
    expect(late).toMatchObject({ rollouts: [{ outcome: "stale" }] });
    expect(started.map((s) => (s.input as { revision: { digest: string } }).revision.digest)).toEqual([
      DIGEST(3),
    ]);
    expect((await rollout()).trigger?.digest).toBe(DIGEST(3));
  });

  it("a newer push supersedes the running older revision through the abort channel", async () => {
    const first = await startExecution(DIGEST(1), "v1", "2026-11-30T11:00:00Z", 1);
    await promoteHandler(deps())({
      context: first.context,
      rollout: ROLLOUT(1),
      target: TARGET,
      scaleDownDelaySeconds: 0,
    });
    const { context } = await startExecution(DIGEST(2), "v2", "2026-11-30T11:05:00Z", 1);
    await awaitHandler(deps())({
      context,
      rollout: ROLLOUT(1),
      stepIndex: 0,
      step: { kind: "pause", reason: "CanaryPauseStep" },
      taskToken: "token-old",
    });
    const result = await trigger()(ecrPush(DIGEST(3), "v3", "2026-11-30T11:06:00Z"));
    expect(result).toMatchObject({ rollouts: [{ outcome: "started", superseded: { status: "signalled" } }] });
    expect(sfn.commandCalls(SendTaskFailureCommand)[0]?.args[0].input).toMatchObject({
      taskToken: "token-old",
      error: "RolloutAborted",
    });
  });

  it("an event that is not an ECR push is refused with the field that is wrong", async () => {
    await expect(
      trigger()({ ...ecrPush(DIGEST(1), "v1", "2026-11-30T11:00:00Z"), detail: { result: "SUCCESS" } }),
    ).rejects.toThrow(/detail/);
  });
});

describe("invalid payloads", () => {
  it("are rejected with the handler's name and every field path", async () => {
    await expect(beginHandler(deps())({ rollout: ROLLOUT(1) })).rejects.toMatchObject({
      name: "InvalidPayloadError",
      message: expect.stringMatching(/^begin: invalid payload: input: .*; executionId: /),
    });
    const context = {
      rollout: "checkout",
      revision: 2,
      image: "x@sha256:1",
      digest: "sha256:1",
      tag: null,
      executionArn: "arn:aws:states:us-east-1:1:execution:sm:e",
    };
    await expect(
      setWeightHandler(deps())({
        context,
        rollout: ROLLOUT(1),
        stepIndex: 0,
        step: { kind: "setWeight", weight: 150 },
      }),
    ).rejects.toThrow(/^set-weight: invalid payload: step\.weight: /);
    await expect(
      awaitHandler(deps())({ context, rollout: ROLLOUT(1), stepIndex: 0, step: { kind: "pause" } }),
    ).rejects.toThrow(/taskToken/);
    await expect(
      abortHandler(deps())({
        context: { ...context, revision: 0 },
        rollout: ROLLOUT(1),
        error: {},
        onFailure: "undo",
        abortScaleDownDelaySeconds: 0,
      }),
    ).rejects.toThrow(/context\.revision: .*error\.Error: .*onFailure: /);
    await expect(
      resumeHandler(deps())({ key: "k", at: 1, payload: { kind: "pause", rollout: "checkout" } }),
    ).rejects.toThrow(/^resume: invalid payload: .*executionArn/);
    await expect(
      resumeHandler(deps())({ key: "k", at: 1, payload: { kind: "tick", rollout: "checkout" } }),
    ).rejects.toThrow(/^resume: invalid payload: .*runId/);
  });
});
