/**
 * The EventBridge publisher against moto: lifecycle events put on a bus, matched by a rule on the
 * project's source and delivered to an SQS queue, and read back from the queue, envelope and
 * detail. The SDK-mock twin is `test/unit/events/events.test.ts`.
 */
import {
  CreateEventBusCommand,
  EventBridgeClient,
  PutRuleCommand,
  PutTargetsCommand,
} from "@aws-sdk/client-eventbridge";
import { MOTO_ACCOUNT, MOTO_REGION, type Moto, motoCall, startMoto } from "@sfn-rollouts/test-support/moto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  EVENT_SOURCE,
  EventBridgePublisher,
  EventPublishError,
  lifecycleEvent,
} from "../../functions/events/index.ts";

const BUS = "rollouts";
const AT = Date.UTC(2026, 10, 30, 12, 0, 0);
const STATE_MACHINE = `arn:aws:states:${MOTO_REGION}:${MOTO_ACCOUNT}:stateMachine:checkout`;

let moto: Moto;
let eventbridge: EventBridgeClient;
let queueUrl: string;

beforeAll(async () => {
  moto = await startMoto();
  eventbridge = new EventBridgeClient(moto.config);
});
afterAll(async () => {
  eventbridge?.destroy();
  await moto?.close();
});

const sqs = (action: string, body: unknown) =>
  motoCall(moto, "sqs", { target: `AmazonSQS.${action}`, body, json: "1.0" }) as Promise<
    Record<string, unknown>
  >;

/** A bus `rollouts` whose rule on the project's source sends every event to a queue. */
beforeEach(async () => {
  await moto.reset();
  await eventbridge.send(new CreateEventBusCommand({ Name: BUS }));
  queueUrl = (await sqs("CreateQueue", { QueueName: "lifecycle" })).QueueUrl as string;
  await eventbridge.send(
    new PutRuleCommand({
      Name: "all-lifecycle",
      EventBusName: BUS,
      EventPattern: JSON.stringify({ source: [EVENT_SOURCE] }),
    }),
  );
  await eventbridge.send(
    new PutTargetsCommand({
      Rule: "all-lifecycle",
      EventBusName: BUS,
      Targets: [{ Id: "queue", Arn: `arn:aws:sqs:${MOTO_REGION}:${MOTO_ACCOUNT}:lifecycle` }],
    }),
  );
});

/** Every event the rule delivered to the queue so far, as EventBridge's envelopes. */
async function delivered(): Promise<Record<string, unknown>[]> {
  const events: Record<string, unknown>[] = [];
  for (;;) {
    const out = await sqs("ReceiveMessage", {
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 0,
    });
    const messages = (out.Messages ?? []) as { Body: string }[];
    if (messages.length === 0) return events;
    events.push(...messages.map((m) => JSON.parse(m.Body) as Record<string, unknown>));
  }
}

const publisher = (eventBusName = BUS) =>
  new EventBridgePublisher({ client: eventbridge, eventBusName, resources: [STATE_MACHINE] });

const event = (n: number) =>
  lifecycleEvent("RolloutStepCompleted", {
    id: `checkout/3/step-${n}`,
    rollout: "checkout",
    revision: { revision: 3, image: "shop@sha256:abc", digest: "sha256:abc" },
    step: n,
    message: `step ${n}`,
    atMs: AT + n * 1000,
  });

describe("EventBridgePublisher against moto", () => {
  it("puts each event on the bus with the project's source, its type, time, resources and detail", async () => {
    await publisher().publish(event(2));
    const [envelope, ...rest] = await delivered();
    expect(rest).toEqual([]);
    expect(envelope?.source).toBe(EVENT_SOURCE);
    expect(envelope?.["detail-type"]).toBe("RolloutStepCompleted");
    expect(envelope?.time).toBe("2026-11-30T12:00:02Z");
    expect(envelope?.resources).toEqual([STATE_MACHINE]);
    expect(envelope?.detail).toEqual(event(2).detail);
  });

  it("sends more than PutEvents' 10 entries in batches, each event once", async () => {
    const events = Array.from({ length: 23 }, (_, i) => event(i));
    await publisher().publish([...events, event(4)]);
    const steps = (await delivered()).map((e) => (e.detail as { step: number }).step).sort((a, b) => a - b);
    expect(steps).toEqual(events.map((_, i) => i));
  });

  it("turns a refused entry into an EventPublishError", async () => {
    await expect(publisher("no-such-bus").publish(event(1))).rejects.toThrow(EventPublishError);
  });
});
