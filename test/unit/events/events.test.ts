import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import {
  EventBridgePublisher,
  EventPublishError,
  LifecycleDetailSchema,
  lifecycleEvent,
  RecordingEventPublisher,
} from "../../../functions/events/index.ts";

const eventbridge = mockClient(EventBridgeClient);
const AT = Date.UTC(2026, 10, 30, 12, 0, 0);
const revision = {
  revision: 3,
  image: "123.dkr.ecr.us-east-1.amazonaws.com/web@sha256:abc",
  digest: "sha256:abc",
};
const publisher = (eventBusName?: string) =>
  new EventBridgePublisher({
    client: new EventBridgeClient({ region: "us-east-1" }),
    ...(eventBusName === undefined ? {} : { eventBusName }),
  });

beforeEach(() => eventbridge.reset());

describe("lifecycleEvent", () => {
  it("fills the detail every handler sends", () => {
    const text = { rollout: "web", image: revision.image, digest: "sha256:abc", message: "weight 50" };
    expect(
      lifecycleEvent("RolloutStepCompleted", {
        rollout: "web",
        revision,
        step: 2,
        message: "weight 50",
        atMs: AT,
      }),
    ).toEqual({
      type: "RolloutStepCompleted",
      detail: {
        rollout: "web",
        revision: 3,
        image: revision.image,
        digest: "sha256:abc",
        step: 2,
        message: "weight 50",
        at: "2026-11-30T12:00:00.000Z",
        escaped: { slack: text, teams: text },
      },
    });
  });

  it("carries the text fields escaped for Slack and Teams, so a value cannot mention or link", () => {
    const { detail } = lifecycleEvent("RolloutAborted", {
      id: "a<b",
      rollout: "web",
      revision: { revision: 2, image: "web:<!here>", digest: null },
      message: "<!channel> [x](https://evil.example) & more",
      atMs: AT,
    });
    expect(detail.escaped).toEqual({
      slack: {
        id: "a&lt;b",
        rollout: "web",
        image: "web:&lt;!here&gt;",
        digest: null,
        message: "&lt;!channel&gt; [x](https://evil.example) &amp; more",
      },
      teams: {
        id: String.raw`a\<b`,
        rollout: "web",
        image: String.raw`web:\<\!here\>`,
        digest: null,
        message: String.raw`\<\!channel\> \[x\]\(https://evil.example\) \& more`,
      },
    });
    // The raw fields stay as written: EventBridge patterns and webhooks read them.
    expect(detail.message).toBe("<!channel> [x](https://evil.example) & more");
  });

  it("uses null for an unknown revision or step and cuts huge messages", () => {
    const event = lifecycleEvent("RolloutAborted", { rollout: "web", message: "x".repeat(10_000), atMs: AT });
    expect(event.detail).toMatchObject({ revision: null, step: null, image: null });
    expect(event.detail.message.length).toBe(4_000);
  });
});

describe("EventBridgePublisher", () => {
  it("sends PutEvents with source sfn-rollouts, the type as detail-type and the JSON detail", async () => {
    eventbridge.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: "1" }] });
    const event = lifecycleEvent("RolloutPaused", {
      rollout: "web",
      revision,
      step: 1,
      message: "paused",
      atMs: AT,
    });
    await publisher("rollouts-bus").publish(event);
    const entry = eventbridge.commandCalls(PutEventsCommand)[0]?.args[0].input.Entries?.[0];
    expect(entry).toMatchObject({
      Source: "sfn-rollouts",
      DetailType: "RolloutPaused",
      EventBusName: "rollouts-bus",
    });
    expect(entry?.Time).toEqual(new Date(AT));
    expect(LifecycleDetailSchema.parse(JSON.parse(entry?.Detail ?? ""))).toEqual(event.detail);
  });

  it("batches by 10 entries", async () => {
    eventbridge.on(PutEventsCommand).resolves({ FailedEntryCount: 0 });
    const events = Array.from({ length: 23 }, (_, i) =>
      lifecycleEvent("RolloutStepCompleted", { rollout: "web", step: i, message: `${i}`, atMs: AT }),
    );
    await publisher().publish(events);
    expect(eventbridge.commandCalls(PutEventsCommand).map((c) => c.args[0].input.Entries?.length)).toEqual([
      10, 10, 3,
    ]);
    expect(eventbridge.commandCalls(PutEventsCommand)[0]?.args[0].input.Entries?.[0]).not.toHaveProperty(
      "EventBusName",
    );
  });

  it("turns FailedEntryCount > 0 into EventPublishError naming the refused entries", async () => {
    eventbridge.on(PutEventsCommand).resolves({
      FailedEntryCount: 1,
      Entries: [{ EventId: "ok" }, { ErrorCode: "InternalFailure", ErrorMessage: "try again" }],
    });
    const error = await publisher()
      .publish([
        lifecycleEvent("RolloutStepCompleted", { rollout: "web", message: "a", atMs: AT }),
        lifecycleEvent("AnalysisRunFailed", { rollout: "web", message: "b", atMs: AT }),
      ])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EventPublishError);
    expect(error).toMatchObject({
      name: "EventPublishError",
      failures: ["AnalysisRunFailed: InternalFailure try again"],
    });
  });

  it("wraps a failed call with its cause", async () => {
    const cause = Object.assign(new Error("denied"), { name: "AccessDeniedException" });
    eventbridge.on(PutEventsCommand).rejects(cause);
    const error = await publisher()
      .publish(lifecycleEvent("RolloutCompleted", { rollout: "web", message: "done", atMs: AT }))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "EventPublishError", cause });
  });
});

describe("RecordingEventPublisher", () => {
  it("records single events and lists, in order, by type", async () => {
    const recorder = new RecordingEventPublisher();
    await recorder.publish(lifecycleEvent("RolloutPaused", { rollout: "web", message: "p", atMs: AT }));
    await recorder.publish([
      lifecycleEvent("RolloutStepCompleted", { rollout: "web", message: "s", atMs: AT }),
      lifecycleEvent("RolloutCompleted", { rollout: "web", message: "c", atMs: AT }),
    ]);
    expect(recorder.types()).toEqual(["RolloutPaused", "RolloutStepCompleted", "RolloutCompleted"]);
    expect(recorder.ofType("RolloutCompleted")).toHaveLength(1);
  });
});

describe("an event's deterministic id", () => {
  const withId = (id: string) => ({
    ...lifecycleEvent("RolloutCompleted", { id, rollout: "web", revision, message: "done", atMs: AT }),
  });

  it("is sent once by EventBridgePublisher, however often a retry publishes it", async () => {
    eventbridge.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: "1" }] });
    const p = publisher();
    await p.publish([withId("x-g1/promote/RolloutCompleted"), withId("x-g1/promote/RolloutCompleted")]);
    await p.publish(withId("x-g1/promote/RolloutCompleted"));
    const sent = eventbridge.commandCalls(PutEventsCommand).flatMap((c) => c.args[0].input.Entries ?? []);
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0]?.Detail ?? "{}")).toMatchObject({ id: "x-g1/promote/RolloutCompleted" });
  });

  it("is sent again after a failed PutEvents (the retry must deliver it)", async () => {
    eventbridge.on(PutEventsCommand).rejectsOnce(new Error("throttled")).resolves({ FailedEntryCount: 0 });
    const p = publisher();
    await expect(p.publish(withId("a"))).rejects.toThrow(EventPublishError);
    await p.publish(withId("a"));
    expect(eventbridge.commandCalls(PutEventsCommand)).toHaveLength(2);
  });

  it("is kept once by RecordingEventPublisher", async () => {
    const r = new RecordingEventPublisher();
    await r.publish(withId("a"));
    await r.publish([withId("a"), withId("b")]);
    expect(r.published.map((e) => e.detail.id)).toEqual(["a", "b"]);
  });
});
