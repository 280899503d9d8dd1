import {
  ExecutionAlreadyExists,
  SendTaskFailureCommand,
  SFNClient,
  StartExecutionCommand,
  TaskTimedOut,
} from "@aws-sdk/client-sfn";
import { DIGEST_A, DIGEST_B, ecrPush, SM } from "@sfn-rollouts/test-support/ecr";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { SfnTaskTokens } from "../../../functions/abort/index.ts";
import { ManualClock } from "../../../functions/clock.ts";
import { RecordingEventPublisher } from "../../../functions/events/memory.ts";
import { MemoryRolloutStore, update } from "../../../functions/store/index.ts";
import type { RolloutItemInput } from "../../../functions/store/schema.ts";
import {
  ExecutionStartError,
  executionName,
  InvalidTriggerEventError,
  RolloutExecutionInputSchema,
  SfnExecutions,
  startRollout,
  type TriggerDeps,
} from "../../../functions/trigger/index.ts";

const sfn = mockClient(SFNClient);
const NOW = Date.UTC(2026, 11, 1, 9, 0, 0);
const execArn = (name: string) => `${SM.replace(":stateMachine:", ":execution:")}:${name}`;

function setup(store = new MemoryRolloutStore({ clock: new ManualClock(NOW) })) {
  const client = new SFNClient({ region: "us-west-2" });
  const deps: TriggerDeps = {
    store,
    executions: new SfnExecutions(client),
    tokens: new SfnTaskTokens(client),
    clock: new ManualClock(NOW),
    routes: [{ rollout: "checkout", repository: "checkout", tags: ["v*"], stateMachineArn: SM }],
  };
  return { deps, store };
}

/** What Begin does on AWS: record that this execution now drives the rollout. */
async function beginRecords(store: MemoryRolloutStore, name: string, extra: Partial<RolloutItemInput> = {}) {
  await update(store, "checkout", "latest", (item) => ({
    ...item,
    executionArn: execArn(name),
    phase: "Progressing",
    ...extra,
  }));
}

beforeEach(() => {
  sfn.reset();
  sfn.on(StartExecutionCommand).callsFake((input: { name: string }) => ({
    executionArn: execArn(input.name),
    startDate: new Date(NOW),
  }));
});

describe("startRollout", () => {
  it("starts the rollout's state machine with a name derived from rollout + digest and records the push", async () => {
    const { deps, store } = setup();
    const result = await startRollout(deps, ecrPush({ tag: "v1", digest: DIGEST_A }));
    const name = executionName("checkout", DIGEST_A, 1);
    expect(result).toMatchObject({
      kind: "handled",
      rollouts: [{ rollout: "checkout", outcome: "started", executionName: name }],
    });

    const call = sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input;
    expect(call?.stateMachineArn).toBe(SM);
    expect(call?.name).toBe(name);
    expect(RolloutExecutionInputSchema.parse(JSON.parse(call?.input ?? ""))).toEqual({
      rollout: "checkout",
      revision: {
        repository: "checkout",
        image: `123456789012.dkr.ecr.us-west-2.amazonaws.com/checkout@${DIGEST_A}`,
        digest: DIGEST_A,
        tag: "v1",
      },
      trigger: {
        eventId: "13cde686-328b-6117-af20-0e5566167482",
        eventTime: Date.UTC(2026, 10, 30, 12, 0, 0),
        generation: 1,
        executionName: name,
      },
    });
    const item = await store.get("checkout");
    expect(item?.trigger).toMatchObject({ digest: DIGEST_A, generation: 1, executionName: name });
    expect(item?.events.at(-1)?.type).toBe("Triggered");
  });

  it("a duplicate event re-issues the same name, hits ExecutionAlreadyExists and starts nothing", async () => {
    const { deps, store } = setup();
    await startRollout(deps, ecrPush());
    sfn
      .on(StartExecutionCommand)
      .rejects(new ExecutionAlreadyExists({ message: "Execution Already Exists", $metadata: {} }));

    const again = await startRollout(deps, ecrPush());
    expect(again).toMatchObject({ kind: "handled", rollouts: [{ outcome: "duplicate" }] });
    const names = sfn.commandCalls(StartExecutionCommand).map((c) => c.args[0].input.name);
    expect(names).toEqual([executionName("checkout", DIGEST_A, 1), executionName("checkout", DIGEST_A, 1)]);
    expect((await store.get("checkout"))?.trigger?.generation).toBe(1);
  });

  it("once Begin recorded the execution, a duplicate (even under another tag) makes no call at all", async () => {
    const { deps, store } = setup();
    await startRollout(deps, ecrPush());
    await beginRecords(store, executionName("checkout", DIGEST_A, 1));
    const again = await startRollout(
      deps,
      ecrPush({ id: "other-event", tag: "v1-retag", time: "2026-11-30T12:05:00Z" }),
    );
    expect(again).toMatchObject({ rollouts: [{ outcome: "duplicate" }] });
    expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(1);
  });

  it("recovers a trigger that crashed after recording the push: the redelivery starts the execution", async () => {
    const { deps } = setup();
    sfn
      .on(StartExecutionCommand)
      .rejectsOnce(Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException" }));
    await expect(startRollout(deps, ecrPush())).rejects.toBeInstanceOf(ExecutionStartError);
    sfn
      .on(StartExecutionCommand)
      .callsFake((input: { name: string }) => ({ executionArn: execArn(input.name) }));
    const retried = await startRollout(deps, ecrPush());
    expect(retried).toMatchObject({
      rollouts: [{ outcome: "started", executionName: executionName("checkout", DIGEST_A, 1) }],
    });
    expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(2);
  });

  it("ignores a push whose tag is not an image tag before it touches the store or Step Functions", async () => {
    const { deps, store } = setup();
    const result = await startRollout(deps, ecrPush({ tag: 'v1"} or vector(1) #' }));
    expect(result).toEqual({
      kind: "ignored",
      reason: expect.stringContaining('image-tag "v1\\"} or vector(1) #" is not an image tag'),
    });
    expect(await store.get("checkout")).toBeUndefined();
    expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(0);
  });

  it("ignores an older digest that arrives after a newer one started", async () => {
    const { deps, store } = setup();
    await startRollout(
      deps,
      ecrPush({ id: "new", digest: DIGEST_B, tag: "v2", time: "2026-11-30T12:10:00Z" }),
    );
    const late = await startRollout(
      deps,
      ecrPush({ id: "old", digest: DIGEST_A, tag: "v1", time: "2026-11-30T12:00:00Z" }),
    );
    expect(late).toMatchObject({ rollouts: [{ outcome: "stale" }] });
    expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(1);
    expect((await store.get("checkout"))?.trigger?.digest).toBe(DIGEST_B);
  });

  it("supersedes a running older revision through the abort channel, then starts the new one", async () => {
    const { deps, store } = setup();
    sfn.on(SendTaskFailureCommand).resolves({});
    await startRollout(deps, ecrPush({ digest: DIGEST_A, tag: "v1" }));
    const oldName = executionName("checkout", DIGEST_A, 1);
    await beginRecords(store, oldName, { phase: "Paused", currentTaskToken: "tok-old", waitingFor: "pause" });

    const result = await startRollout(
      deps,
      ecrPush({ id: "e2", digest: DIGEST_B, tag: "v2", time: "2026-11-30T12:30:00Z" }),
    );
    const newName = executionName("checkout", DIGEST_B, 2);
    expect(result).toMatchObject({
      rollouts: [
        {
          outcome: "started",
          executionName: newName,
          superseded: { status: "signalled", waitingFor: "pause" },
        },
      ],
    });
    // The abort is sent before the new execution starts.
    const calls = sfn.calls().map((c) => (c.args[0] as { constructor: { name: string } }).constructor.name);
    expect(calls).toEqual(["StartExecutionCommand", "SendTaskFailureCommand", "StartExecutionCommand"]);
    expect(sfn.commandCalls(SendTaskFailureCommand)[0]?.args[0].input).toMatchObject({
      taskToken: "tok-old",
      error: "RolloutAborted",
      cause: expect.stringContaining("superseded by a newer revision: v2@sha256:b2b2"),
    });
    const item = await store.get("checkout");
    expect(item).toMatchObject({ abortRequested: true, abortExecutionArn: execArn(oldName) });
    expect(item?.trigger).toMatchObject({ digest: DIGEST_B, generation: 2, executionName: newName });
  });

  it("still starts the new revision when the older execution's token is already used", async () => {
    const { deps, store } = setup();
    sfn.on(SendTaskFailureCommand).rejects(new TaskTimedOut({ message: "Task Timed Out", $metadata: {} }));
    await startRollout(deps, ecrPush());
    await beginRecords(store, executionName("checkout", DIGEST_A, 1), {
      currentTaskToken: "used",
      waitingFor: "analysis",
    });
    const result = await startRollout(
      deps,
      ecrPush({ id: "e2", digest: DIGEST_B, tag: "v2", time: "2026-11-30T12:30:00Z" }),
    );
    expect(result).toMatchObject({
      rollouts: [{ outcome: "started", superseded: { status: "token-stale", reason: "TaskTimedOut" } }],
    });
    expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(2);
  });

  it("rolls the same digest out again when it is re-pushed later (a rollback by re-tag)", async () => {
    const { deps } = setup();
    await startRollout(deps, ecrPush({ id: "1", digest: DIGEST_A, time: "2026-11-30T12:00:00Z" }));
    await startRollout(deps, ecrPush({ id: "2", digest: DIGEST_B, time: "2026-11-30T13:00:00Z" }));
    const back = await startRollout(
      deps,
      ecrPush({ id: "3", digest: DIGEST_A, tag: "v1-rollback", time: "2026-11-30T14:00:00Z" }),
    );
    expect(back).toMatchObject({
      rollouts: [{ outcome: "started", executionName: executionName("checkout", DIGEST_A, 3) }],
    });
  });

  it("serialises two concurrent pushes on the conditional write: the loser re-decides", async () => {
    const base = new MemoryRolloutStore({ clock: new ManualClock(NOW) });
    const { deps } = setup(base);
    // While the older push (A) is being recorded, the newer push (B) is handled completely.
    const racing = new (class extends MemoryRolloutStore {
      raced = false;
      override async save(item: RolloutItemInput, expected: number | null) {
        if (!this.raced) {
          this.raced = true;
          await startRollout(
            deps,
            ecrPush({ id: "b", digest: DIGEST_B, tag: "v2", time: "2026-11-30T12:01:00Z" }),
          );
        }
        return base.save(item, expected);
      }
      override get(name: string) {
        return base.get(name);
      }
    })();
    const older = await startRollout(
      { ...deps, store: racing },
      ecrPush({ id: "a", digest: DIGEST_A, time: "2026-11-30T12:00:00Z" }),
    );
    expect(base.conflicts).toBe(1);
    expect(older).toMatchObject({ rollouts: [{ outcome: "stale" }] });
    expect((await base.get("checkout"))?.trigger).toMatchObject({ digest: DIGEST_B, generation: 1 });
    expect(sfn.commandCalls(StartExecutionCommand).map((c) => c.args[0].input.name)).toEqual([
      executionName("checkout", DIGEST_B, 1),
    ]);
  });

  it("ignores pushes no rollout listens to and non-push actions; rejects invalid events", async () => {
    const { deps } = setup();
    expect(await startRollout(deps, ecrPush({ tag: "latest" }))).toEqual({
      kind: "ignored",
      reason: "no rollout is triggered by checkout:latest",
    });
    expect(await startRollout(deps, ecrPush({ detail: { "action-type": "DELETE" } }))).toMatchObject({
      kind: "ignored",
    });
    await expect(startRollout(deps, { hello: "world" })).rejects.toBeInstanceOf(InvalidTriggerEventError);
    expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(0);
  });
});

describe("a canary gate's rollback cooldown, applied by the trigger", () => {
  const withCooldown = (store: MemoryRolloutStore, seconds = 3600, maxPerHour = 3) => {
    const { deps } = setup(store);
    const events = new RecordingEventPublisher();
    return {
      deps: {
        ...deps,
        events,
        routes: [{ ...(deps.routes[0] as TriggerDeps["routes"][number]), cooldown: { seconds, maxPerHour } }],
      },
      events,
    };
  };
  /** v1 rolled out and then rolled back `ago` seconds before NOW. */
  async function rolledBack(store: MemoryRolloutStore, ago: number[]) {
    const { deps } = setup(store);
    await startRollout(deps, ecrPush({ tag: "v1", digest: DIGEST_A }));
    await update(store, "checkout", "latest", (item) => ({
      ...item,
      phase: "Degraded",
      rollbacks: ago.map((s) => ({ digest: DIGEST_A, at: NOW - s * 1000 })),
    }));
  }

  it("refuses a push within the cooldown after a rollback, with an event that says when it ends", async () => {
    const store = new MemoryRolloutStore({ clock: new ManualClock(NOW) });
    await rolledBack(store, [600]);
    const { deps, events } = withCooldown(store);
    sfn.resetHistory();
    const result = await startRollout(
      deps,
      ecrPush({ id: "e2", tag: "v2", digest: DIGEST_B, time: "2026-12-01T09:00:00Z" }),
    );
    const message = `push of v2@${DIGEST_B.slice(0, 19)} refused: the rollout rolled back 600 s ago: cooldown, 3000 s left (rollback cooldown 3600 s)`;
    expect(result).toMatchObject({
      kind: "handled",
      rollouts: [{ rollout: "checkout", outcome: "refused", message }],
    });
    expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(0);
    const item = await store.get("checkout");
    expect(item?.events.at(-1)).toMatchObject({ type: "PushRefused", message });
    expect(item?.trigger?.digest).toBe(DIGEST_A);
    expect(events.ofType("RolloutPushRefused").map((e) => e.detail.message)).toEqual([message]);
  });

  it("starts a push once the cooldown has passed", async () => {
    const store = new MemoryRolloutStore({ clock: new ManualClock(NOW) });
    await rolledBack(store, [3601]);
    const { deps } = withCooldown(store);
    const result = await startRollout(
      deps,
      ecrPush({ id: "e2", tag: "v2", digest: DIGEST_B, time: "2026-12-01T09:00:00Z" }),
    );
    expect(result).toMatchObject({ rollouts: [{ outcome: "started" }] });
  });

  it("refuses every push after too many rollbacks within an hour: a hard stop", async () => {
    const store = new MemoryRolloutStore({ clock: new ManualClock(NOW) });
    await rolledBack(store, [3000, 2000, 1000]);
    const { deps } = withCooldown(store, 60, 3);
    const result = await startRollout(
      deps,
      ecrPush({ id: "e2", tag: "v2", digest: DIGEST_B, time: "2026-12-01T09:00:00Z" }),
    );
    expect(result).toMatchObject({
      rollouts: [
        {
          outcome: "refused",
          message: expect.stringContaining(
            "3 rollbacks in the last hour (maxPerHour 3): pushes are refused until 2026-12-01T09:10:00.000Z",
          ),
        },
      ],
    });
  });

  it("does nothing without a canary gate: the route has no cooldown", async () => {
    const store = new MemoryRolloutStore({ clock: new ManualClock(NOW) });
    await rolledBack(store, [10]);
    const { deps } = setup(store);
    const result = await startRollout(
      deps,
      ecrPush({ id: "e2", tag: "v2", digest: DIGEST_B, time: "2026-12-01T09:00:00Z" }),
    );
    expect(result).toMatchObject({ rollouts: [{ outcome: "started" }] });
  });
});

describe("the execution input from a wave coordinator's push rule", () => {
  it("reads the push event's ISO time as epoch milliseconds, and refuses a time that is none", () => {
    const input = {
      rollout: "shop",
      revision: { repository: "shop", image: "i", digest: DIGEST_B, tag: "v2" },
      trigger: { eventId: "e", eventTime: "2026-12-01T09:00:00Z", generation: 1, executionName: "x" },
    };
    expect(RolloutExecutionInputSchema.parse(input).trigger.eventTime).toBe(
      Date.parse("2026-12-01T09:00:00Z"),
    );
    const bad = RolloutExecutionInputSchema.safeParse({
      ...input,
      trigger: { ...input.trigger, eventTime: "soon" },
    });
    expect(bad.success).toBe(false);
    expect(JSON.stringify(bad.error?.issues[0]?.path)).toBe('["trigger","eventTime"]');
  });
});
