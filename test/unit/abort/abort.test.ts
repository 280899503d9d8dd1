import {
  InvalidToken,
  SendTaskFailureCommand,
  SendTaskSuccessCommand,
  SFNClient,
  TaskDoesNotExist,
  TaskTimedOut,
} from "@aws-sdk/client-sfn";
import { EXEC, runningRollout, T0 } from "@sfn-rollouts/test-support/running-rollout";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import {
  AbortIncompleteError,
  abortedStatusMessage,
  assertDrives,
  assertNotAborted,
  ExecutionSupersededError,
  RecordingTaskTokens,
  RolloutAbortedError,
  registerTaskToken,
  requestAbort,
  SfnTaskTokens,
  TaskTokenError,
} from "../../../functions/abort/index.ts";
import { ConcurrentUpdateError, MemoryRolloutStore, update } from "../../../functions/store/index.ts";
import type { RolloutItemInput } from "../../../functions/store/schema.ts";

const sfnMock = mockClient(SFNClient);
const tokens = () => new SfnTaskTokens(new SFNClient({ region: "us-east-1" }));

beforeEach(() => sfnMock.reset());

describe("requestAbort", () => {
  it("records abortRequested with a conditional write, then fails the waiting token with RolloutAborted", async () => {
    const { store, clock } = await runningRollout();
    sfnMock.on(SendTaskFailureCommand).resolves({});
    const outcome = await requestAbort({
      store,
      sfn: tokens(),
      name: "web",
      reason: "error rate too high",
      clock,
    });

    expect(outcome).toMatchObject({ status: "signalled", waitingFor: "pause", alreadyRequested: false });
    expect(sfnMock.commandCalls(SendTaskFailureCommand)[0]?.args[0].input).toEqual({
      taskToken: "token-pause",
      error: "RolloutAborted",
      cause: "error rate too high",
    });
    const item = await store.get("web");
    expect(item).toMatchObject({
      abortRequested: true,
      abortReason: "error rate too high",
      abortRequestedAt: T0,
      abortExecutionArn: EXEC,
      version: 2,
    });
    expect(item?.events.at(-1)).toEqual({ at: T0, type: "AbortRequested", message: "error rate too high" });
  });

  it.each([
    [new TaskTimedOut({ message: "Task Timed Out", $metadata: {} }), "TaskTimedOut"],
    [new TaskDoesNotExist({ message: "Task does not exist anymore", $metadata: {} }), "TaskDoesNotExist"],
    [new InvalidToken({ message: "Invalid token", $metadata: {} }), "InvalidToken"],
  ])("reports a token already used or expired (%s) clearly instead of crashing", async (error, reason) => {
    const { store, clock } = await runningRollout();
    sfnMock.on(SendTaskFailureCommand).rejects(error);
    const outcome = await requestAbort({ store, sfn: tokens(), name: "web", reason: "stop", clock });
    expect(outcome.status).toBe("token-stale");
    expect(outcome).toMatchObject({ reason });
    expect(outcome.message).toContain(reason);
    expect(outcome.message).toContain("stops at its next step");
    // The flag is set regardless, so the next Lambda of the execution throws RolloutAborted.
    expect((await store.get("web"))?.abortRequested).toBe(true);
  });

  it("records the abort when the execution is between waits (no token)", async () => {
    const { store, clock } = await runningRollout({
      phase: "Progressing",
      currentTaskToken: null,
      waitingFor: null,
    });
    const sfn = new RecordingTaskTokens();
    const outcome = await requestAbort({ store, sfn, name: "web", reason: "manual", clock });
    expect(outcome.status).toBe("recorded");
    expect(outcome.message).toMatch(/not waiting/);
    expect(sfn.failures).toEqual([]);
    expect((await store.get("web"))?.abortRequested).toBe(true);
  });

  it("gives a clear message for a rollout that is not running and writes nothing", async () => {
    const { store, clock } = await runningRollout({ phase: "Healthy", message: "rollout completed" });
    const sfn = new RecordingTaskTokens();
    const outcome = await requestAbort({ store, sfn, name: "web", reason: "manual", clock });
    expect(outcome).toEqual({
      status: "not-running",
      phase: "Healthy",
      message: 'rollout "web" is not running (phase Healthy: rollout completed): nothing to abort',
    });
    expect((await store.get("web"))?.version).toBe(1);
    expect(sfn.failures).toEqual([]);
  });

  it("says so for an unknown rollout", async () => {
    const { clock } = await runningRollout();
    const outcome = await requestAbort({
      store: new MemoryRolloutStore({ clock }),
      sfn: new RecordingTaskTokens(),
      name: "ghost",
      reason: "x",
      clock,
    });
    expect(outcome).toEqual({ status: "not-found", message: 'rollout "ghost" not found: nothing to abort' });
  });

  it("is idempotent: a second request keeps the first reason and re-sends the failure", async () => {
    const { store, clock } = await runningRollout();
    const sfn = new RecordingTaskTokens();
    sfn.live.add("token-pause");
    await requestAbort({ store, sfn, name: "web", reason: "first", clock });
    const again = await requestAbort({ store, sfn, name: "web", reason: "second", clock });
    expect(again).toMatchObject({ status: "token-stale", alreadyRequested: true });
    expect(sfn.failures).toEqual([{ token: "token-pause", error: "RolloutAborted", cause: "first" }]);
    const item = await store.get("web");
    expect(item?.abortReason).toBe("first");
    expect(item?.version).toBe(2);
  });

  it("does not abort a newer execution when aimed at an older one", async () => {
    const { store, clock } = await runningRollout();
    const outcome = await requestAbort({
      store,
      sfn: new RecordingTaskTokens(),
      name: "web",
      reason: "superseded",
      clock,
      executionArn: "arn:aws:states:us-east-1:123456789012:execution:web:older",
    });
    expect(outcome.status).toBe("not-running");
    expect(outcome.message).toContain("no longer drives");
    expect((await store.get("web"))?.abortRequested).toBe(false);
  });

  it("throws a named, retryable TaskTokenError on other failures, with the abort already recorded", async () => {
    const { store, clock } = await runningRollout();
    const cause = Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException" });
    sfnMock.on(SendTaskFailureCommand).rejects(cause);
    const error = await requestAbort({ store, sfn: tokens(), name: "web", reason: "x", clock }).catch(
      (e) => e,
    );
    expect(error).toBeInstanceOf(TaskTokenError);
    expect(error).toBeInstanceOf(AbortIncompleteError);
    expect(error).toMatchObject({ name: "AbortIncompleteError", cause });
    expect(error.message).toBe(
      "abort of web recorded (x), but the pause wait was not ended: SendTaskFailure failed: ThrottlingException: Rate exceeded; " +
        "run `rollouts abort web` again to finish it",
    );
    expect((await store.get("web"))?.abortRequested).toBe(true);

    // Run again once Step Functions answers: the stored token is failed now, and the message says
    // that this request finished the first one.
    sfnMock.on(SendTaskFailureCommand).resolves({});
    const again = await requestAbort({ store, sfn: tokens(), name: "web", reason: "y", clock });
    expect(again).toMatchObject({ status: "signalled", alreadyRequested: true });
    expect(again.message).toBe(
      "abort of web was already requested (x): finishing it, the execution was waiting on pause and has now been told to abort",
    );
    expect(sfnMock.commandCalls(SendTaskFailureCommand).at(-1)?.args[0].input).toMatchObject({
      error: "RolloutAborted",
      cause: "x",
    });
  });

  it("sends the failure to the token stored by a handler that won the race against the abort write", async () => {
    const { store, clock } = await runningRollout({
      currentTaskToken: null,
      waitingFor: null,
      phase: "Progressing",
    });
    // The abort reads version 1; before it writes, the analysis handler stores its token (version 2).
    const racing = new (class extends MemoryRolloutStore {
      raced = false;
      override async save(item: RolloutItemInput, expected: number | null) {
        if (!this.raced && item.abortRequested) {
          this.raced = true;
          await registerTaskToken({
            store,
            name: "web",
            executionArn: EXEC,
            token: "token-analysis",
            waitingFor: "analysis",
            clock,
          });
        }
        return store.save(item, expected);
      }
      override get(name: string) {
        return store.get(name);
      }
    })({ clock });
    const sfn = new RecordingTaskTokens();
    sfn.live.add("token-analysis");
    const outcome = await requestAbort({ store: racing, sfn, name: "web", reason: "stop", clock });
    expect(store.conflicts).toBe(1);
    expect(outcome).toMatchObject({ status: "signalled", waitingFor: "analysis" });
    expect(sfn.failures.map((f) => f.token)).toEqual(["token-analysis"]);
  });
});

describe("assertNotAborted and the handler side of the channel", () => {
  it("throws RolloutAbortedError named RolloutAborted with the reason", async () => {
    const { item } = await runningRollout({
      abortRequested: true,
      abortReason: "too slow",
      abortExecutionArn: EXEC,
    });
    const error = (() => {
      try {
        assertNotAborted(item, EXEC);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(RolloutAbortedError);
    expect(error).toMatchObject({ name: "RolloutAborted", message: "too slow", reason: "too slow" });
  });

  it("passes when no abort is requested, or when the abort was aimed at another execution", async () => {
    const { item } = await runningRollout();
    expect(() => assertNotAborted(item, EXEC)).not.toThrow();
    const aimedElsewhere = { ...item, abortRequested: true, abortExecutionArn: "arn:older" };
    expect(() => assertNotAborted(aimedElsewhere, EXEC)).not.toThrow();
    expect(() => assertNotAborted(aimedElsewhere)).toThrow(RolloutAbortedError);
  });

  it("a handler sees abortRequested mid-step: its write conflicts, the retry re-reads and throws RolloutAborted", async () => {
    const { store, clock } = await runningRollout({
      phase: "Progressing",
      currentTaskToken: null,
      waitingFor: null,
    });
    let attempts = 0;
    // The set-weight handler's store: the operator's abort lands after the handler read the item
    // and before its conditional write (the abort itself goes straight to the real store).
    const handlerStore = new (class extends MemoryRolloutStore {
      raced = false;
      override async save(item: RolloutItemInput, expected: number | null) {
        if (!this.raced) {
          this.raced = true;
          const outcome = await requestAbort({
            store,
            sfn: new RecordingTaskTokens(),
            name: "web",
            reason: "operator",
            clock,
          });
          expect(outcome.status).toBe("recorded");
        }
        return store.save(item, expected);
      }
      override get(name: string) {
        return store.get(name);
      }
    })({ clock });
    const setWeight = update(handlerStore, "web", "latest", (current) => {
      attempts++;
      assertNotAborted(current, EXEC);
      return { ...current, weight: 50, stepIndex: 3 };
    });
    await expect(setWeight).rejects.toMatchObject({ name: "RolloutAborted", reason: "operator" });
    expect(attempts).toBe(2);
    expect(store.conflicts).toBe(1);
    expect((await store.get("web"))?.weight).toBe(25);
  });

  it("registerTaskToken refuses to wait once an abort is recorded, and refuses a superseded execution", async () => {
    const { store, clock } = await runningRollout({ currentTaskToken: null, waitingFor: null });
    await requestAbort({ store, sfn: new RecordingTaskTokens(), name: "web", reason: "stop", clock });
    await expect(
      registerTaskToken({ store, name: "web", executionArn: EXEC, token: "t", waitingFor: "pause", clock }),
    ).rejects.toBeInstanceOf(RolloutAbortedError);

    const fresh = await runningRollout();
    await expect(
      registerTaskToken({
        store: fresh.store,
        name: "web",
        executionArn: "arn:older",
        token: "t",
        waitingFor: "pause",
        clock,
      }),
    ).rejects.toBeInstanceOf(ExecutionSupersededError);
    expect(() => assertDrives(fresh.item, EXEC)).not.toThrow();
  });

  it("registerTaskToken stores the token and what it waits for", async () => {
    const { store, clock } = await runningRollout({ currentTaskToken: null, waitingFor: null });
    clock.advance(1000);
    const item = await registerTaskToken({
      store,
      name: "web",
      executionArn: EXEC,
      token: "t1",
      waitingFor: "approval",
      clock,
    });
    expect(item).toMatchObject({
      currentTaskToken: "t1",
      waitingFor: "approval",
      waitingSince: T0 + 1000,
      version: 2,
    });
  });

  it("formats Argo's aborted status message", () => {
    expect(abortedStatusMessage(4, 'Metric "error-rate" assessed Failed')).toBe(
      'RolloutAborted: Rollout aborted update to revision 4: Metric "error-rate" assessed Failed',
    );
  });
});

describe("SfnTaskTokens", () => {
  it("sends success with JSON output and reports a token already used", async () => {
    sfnMock
      .on(SendTaskSuccessCommand)
      .resolvesOnce({})
      .rejects(new TaskTimedOut({ message: "Task Timed Out: 'token'", $metadata: {} }));
    expect(await tokens().sendSuccess("t", { phase: "Successful" })).toEqual({ delivered: true });
    expect(sfnMock.commandCalls(SendTaskSuccessCommand)[0]?.args[0].input).toEqual({
      taskToken: "t",
      output: '{"phase":"Successful"}',
    });
    expect(await tokens().sendSuccess("t", null)).toMatchObject({ delivered: false, reason: "TaskTimedOut" });
  });

  it("keeps error and cause within Step Functions' limits", async () => {
    sfnMock.on(SendTaskFailureCommand).resolves({});
    await tokens().sendFailure("t", "E".repeat(300), "c".repeat(40_000));
    const input = sfnMock.commandCalls(SendTaskFailureCommand)[0]?.args[0].input;
    expect(input?.error?.length).toBe(256);
    expect(input?.cause?.length).toBe(32_768);
  });

  it("does not mistake an unrelated conflict for a stale token", async () => {
    sfnMock.on(SendTaskFailureCommand).rejects(new ConcurrentUpdateError("x", 1));
    await expect(tokens().sendFailure("t", "E", "c")).rejects.toBeInstanceOf(TaskTokenError);
  });
});
