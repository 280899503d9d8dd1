import {
  type Direct,
  digestOf,
  direct,
  execArn,
  itemOf,
  NAME,
  ROLLOUT,
  startRevision,
  T0,
  TARGET,
} from "@sfn-rollouts/test-support/direct-workflow";
import { describe, expect, it } from "vitest";
import { begin } from "../../../functions/workflow/begin.ts";
import { type BeginPayload, BeginPayloadSchema } from "../../../functions/workflow/payloads.ts";

/**
 * Begin in a region of a release in waves: the coordinator of each push starts the region's
 * rollout, and the region's item records the push of the release driving it. An older release
 * reaching the region after a newer one took it is refused and changes nothing.
 */

const PASS = { ...ROLLOUT, pass: "us" };

interface Release {
  executionName: string;
  eventId: string;
  eventTime: number;
  /** When the release's coordinator started (ISO 8601, as `$$.Execution.StartTime` gives it). */
  releasedAt?: number;
  n: number;
}

const release = (n: number, eventTime: number, eventId = `event-${n}`): Release => ({
  executionName: `${NAME}-${String(n).repeat(24)}-g1`,
  eventId,
  eventTime,
  n,
});

/** The input the coordinator of `r` gives the region's rollout (with `extra`, an undo's fields). */
function payload(
  r: Release,
  extra: Partial<BeginPayload["input"]> = {},
  rollout: BeginPayload["rollout"] = PASS,
  revision = r.n,
): BeginPayload {
  const digest = digestOf(revision);
  // Parsed as Begin's handler parses it (the coordinator's start time is ISO 8601).
  return BeginPayloadSchema.parse({
    input: {
      rollout: NAME,
      revision: {
        repository: "checkout",
        image: `123456789012.dkr.ecr.us-east-1.amazonaws.com/checkout@${digest}`,
        digest,
        tag: `v${revision}`,
      },
      trigger: {
        eventId: r.eventId,
        eventTime: r.eventTime,
        generation: 1,
        executionName: r.executionName,
        ...(r.releasedAt === undefined ? {} : { releasedAt: new Date(r.releasedAt).toISOString() }),
      },
      ...extra,
    },
    executionId: execArn(extra.rollback ? `undo-${r.executionName}` : r.executionName),
    rollout,
    stepLabels: [],
    target: TARGET,
  });
}

/** Begin of `older` after `newer` took the region: refused, and nothing changed. */
async function expectRefused(d: Direct, older: Release, newer: Release) {
  const before = await itemOf(d);
  const calls = d.target.calls.length;
  const published = d.events.published.length;
  await expect(begin(d.deps, payload(older))).rejects.toMatchObject({
    name: "ExecutionSuperseded",
    message: expect.stringContaining(
      `release ${older.executionName} (pushed ${new Date(older.eventTime).toISOString()}) is older than release ${newer.executionName}`,
    ),
  });
  expect(await itemOf(d)).toEqual(before);
  expect(d.target.calls.length).toBe(calls);
  expect(d.events.published.length).toBe(published);
  expect(d.tokens.failures).toEqual([]);
}

describe("Begin orders the releases of a region in waves by their push", () => {
  it("refuses an older release the region a newer one took, touching nothing", async () => {
    const d = direct();
    const older = release(2, T0 - 60_000);
    const newer = release(3, T0);
    await begin(d.deps, payload(newer));
    // The newer release waits on a token in this region (an approval, a pause).
    const held = await itemOf(d);
    await d.store.save({ ...held, currentTaskToken: "token-of-newer", waitingFor: "approval" }, held.version);
    await expectRefused(d, older, newer);
    expect((await itemOf(d)).executionArn).toBe(execArn(newer.executionName));
  });

  it("lets a newer release take the region over from an older one, and records its push", async () => {
    const d = direct();
    const older = release(2, T0 - 60_000);
    const newer = release(3, T0);
    await begin(d.deps, payload(older));
    expect((await itemOf(d)).startedBy).toEqual({
      eventId: older.eventId,
      eventTime: older.eventTime,
      executionName: older.executionName,
    });
    await begin(d.deps, payload(newer));
    const item = await itemOf(d);
    expect(item.executionArn).toBe(execArn(newer.executionName));
    expect(item.currentRevision?.tag).toBe("v3");
    expect(item.startedBy).toEqual({
      eventId: newer.eventId,
      eventTime: newer.eventTime,
      executionName: newer.executionName,
    });
  });

  it("pushed in the same second: the event id decides, in whatever order the releases arrive", async () => {
    const a = release(2, T0, "0f000000-0000-4000-8000-000000000000");
    const b = release(3, T0, "9a000000-0000-4000-8000-000000000000");
    const first = direct();
    await begin(first.deps, payload(a));
    await begin(first.deps, payload(b));
    expect((await itemOf(first)).executionArn).toBe(execArn(b.executionName));
    const second = direct();
    await begin(second.deps, payload(b));
    await expectRefused(second, a, b);
  });

  it("pushed in the same second: the release whose coordinator started later wins, whatever the ids", async () => {
    // The coordinators start 300 ms apart; the first one's event id sorts last.
    const first = { ...release(2, T0, "9a000000-0000-4000-8000-000000000000"), releasedAt: T0 + 100 };
    const later = { ...release(3, T0, "0f000000-0000-4000-8000-000000000000"), releasedAt: T0 + 400 };
    const d = direct();
    await begin(d.deps, payload(first));
    await begin(d.deps, payload(later));
    expect((await itemOf(d)).startedBy).toMatchObject({ releasedAt: later.releasedAt });
    await expectRefused(d, first, later);
  });

  it("lets the release's own undo through (the same push)", async () => {
    const d = direct();
    await begin(d.deps, payload(release(1, T0 - 60_000)));
    const r = release(2, T0);
    await begin(d.deps, payload(r));
    // rollback-all: back to revision 1, under the release's own push.
    await begin(d.deps, payload(r, { rollback: true, undoes: execArn(r.executionName) }, PASS, 1));
    const item = await itemOf(d);
    expect(item.executionArn).toBe(execArn(`undo-${r.executionName}`));
    expect(item.currentRevision?.tag).toBe("v1");
  });

  it("a rollout not in waves keeps the trigger's order: the push the trigger accepted takes over", async () => {
    const d = direct();
    await startRevision(d, 1);
    // The trigger accepted a push whose event time is older than revision 1's (a redelivery
    // window, a clock skew): the trigger's record, not the push time, decides for a single rollout.
    const r = { ...release(2, T0 - 60_000), executionName: `${NAME}-accepted-g2` };
    const item = await itemOf(d);
    await d.store.save(
      {
        ...item,
        trigger: {
          ...(item.trigger as NonNullable<typeof item.trigger>),
          digest: digestOf(2),
          eventId: r.eventId,
          eventTime: r.eventTime,
          generation: 2,
          executionName: r.executionName,
        },
      },
      item.version,
    );
    await begin(d.deps, payload(r, {}, ROLLOUT));
    expect((await itemOf(d)).executionArn).toBe(execArn(r.executionName));
  });
});
