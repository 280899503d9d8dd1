import { DIGEST_A, DIGEST_B, ecrPush, SM } from "@sfn-rollouts/test-support/ecr";
import { describe, expect, it } from "vitest";
import { newRolloutItem, type RolloutItem } from "../../../functions/store/schema.ts";
import {
  decideTrigger,
  executionName,
  globMatches,
  type ImagePush,
  InvalidTriggerEventError,
  matchRoutes,
  parseEcrEvent,
  RECOVERY_WINDOW_MS,
  registryHost,
  TriggerRoutesSchema,
} from "../../../functions/trigger/index.ts";

describe("parseEcrEvent", () => {
  it("reads the AWS documentation's sample push event (its digest completed to 64 hex digits: the docs shorten it)", () => {
    const sample = {
      version: "0",
      id: "13cde686-328b-6117-af20-0e5566167482",
      "detail-type": "ECR Image Action",
      source: "aws.ecr",
      account: "123456789012",
      time: "2019-11-16T01:54:34Z",
      region: "us-west-2",
      resources: [],
      detail: {
        result: "SUCCESS",
        "repository-name": "my-repository-name",
        "image-digest": "sha256:7f5b2640fe6fb4f46592dfd3410c4a79dac4f89e4782432e0378abcd12345678",
        "action-type": "PUSH",
        "image-tag": "latest",
      },
    };
    expect(parseEcrEvent(sample)).toEqual({
      kind: "push",
      push: {
        repository: "my-repository-name",
        digest: "sha256:7f5b2640fe6fb4f46592dfd3410c4a79dac4f89e4782432e0378abcd12345678",
        tag: "latest",
        image:
          "123456789012.dkr.ecr.us-west-2.amazonaws.com/my-repository-name@sha256:7f5b2640fe6fb4f46592dfd3410c4a79dac4f89e4782432e0378abcd12345678",
        eventId: "13cde686-328b-6117-af20-0e5566167482",
        eventTime: Date.UTC(2019, 10, 16, 1, 54, 34),
      },
    });
  });

  it("accepts an untagged push and extra detail fields", () => {
    const parsed = parseEcrEvent(ecrPush({ tag: null, detail: { "manifest-media-type": "x" } }));
    expect(parsed).toMatchObject({ kind: "push", push: { tag: null } });
  });

  it.each([
    [{ "action-type": "DELETE" }, "action-type DELETE"],
    [{ result: "FAILURE" }, "result FAILURE"],
  ])("ignores %o with a reason", (detail, reason) => {
    expect(parseEcrEvent(ecrPush({ detail }))).toEqual({ kind: "ignored", reason });
  });

  it("rejects what is not an ECR Image Action event, naming the fields", () => {
    const bad = { ...ecrPush(), source: "aws.s3", detail: { "action-type": "PUSH", result: "SUCCESS" } };
    const error = (() => {
      try {
        parseEcrEvent(bad);
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error).toBeInstanceOf(InvalidTriggerEventError);
    expect(error?.name).toBe("InvalidTriggerEventError");
    expect(error?.message).toContain("source");
    expect(error?.message).toContain("detail.repository-name");
  });

  it.each([
    [
      { digest: "latest" },
      'image-digest "latest" is not an ECR image digest (sha256: and 64 lower-case hex digits)',
    ],
    [{ digest: `sha256:${"A1".repeat(32)}` }, "is not an ECR image digest"],
    [{ digest: `sha512:${"a1".repeat(64)}` }, "is not an ECR image digest"],
    [{ digest: `sha256:${"a1".repeat(32)}"}` }, "is not an ECR image digest"],
    [{ tag: 'v1"} or vector(1) #' }, 'image-tag "v1\\"} or vector(1) #" is not an image tag'],
    [{ tag: "" }, 'image-tag "" is not an image tag'],
    [{ tag: "-v1" }, "is not an image tag"],
    [{ tag: ".v1" }, "is not an image tag"],
    [{ tag: "v1\u001b[2J" }, "is not an image tag"],
    [{ tag: "x".repeat(301) }, 'image-tag "xxxxxxxx'],
    [{ repository: "Checkout" }, 'repository-name "Checkout" is not an ECR repository name'],
    [{ repository: "team//checkout" }, "is not an ECR repository name"],
    [{ repository: "a" }, "is not an ECR repository name"],
    [{ repository: `a${"b".repeat(256)}` }, "is not an ECR repository name"],
  ])("ignores a push whose values ECR could not have made (%o), with the reason", (overrides, reason) => {
    const parsed = parseEcrEvent(ecrPush(overrides));
    expect(parsed.kind).toBe("ignored");
    expect((parsed as { reason: string }).reason).toContain(reason);
  });

  it.each([
    [{ tag: "x".repeat(300) }],
    [{ tag: "_v1.2-rc_3" }],
    [{ repository: "team/checkout-api/v2" }],
    [{ repository: "a__b.c---d" }],
  ])("accepts the values ECR allows at their limits (%o)", (overrides) => {
    expect(parseEcrEvent(ecrPush(overrides)).kind).toBe("push");
  });

  it("builds China-region registry hosts", () => {
    expect(registryHost("123456789012", "cn-north-1")).toBe(
      "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn",
    );
  });
});

describe("routes", () => {
  const routes = TriggerRoutesSchema.parse([
    { rollout: "checkout", repository: "checkout", tags: ["v*"], stateMachineArn: SM },
    { rollout: "checkout-eu", repository: "checkout", tags: ["v*", "eu-?"], stateMachineArn: SM },
    { rollout: "search", repository: "search", stateMachineArn: SM },
  ]);

  it.each([
    ["checkout", "v1.2", ["checkout", "checkout-eu"]],
    ["checkout", "eu-1", ["checkout-eu"]],
    ["checkout", "eu-12", []],
    ["checkout", null, []],
    ["search", null, ["search"]],
    ["search", "anything", ["search"]],
    ["other", "v1", []],
  ])("%s:%s → %o", (repository, tag, expected) => {
    expect(matchRoutes(routes, { repository, tag }).map((r) => r.rollout)).toEqual(expected);
  });

  it.each([
    ["v*", "v1.0.0", true],
    ["v*", "xv1", false],
    ["release-?", "release-1", true],
    ["a.b", "axb", false],
    ["(x)+", "(x)+", true],
  ])("glob %s matches %s: %s", (pattern, value, expected) => {
    expect(globMatches(pattern, value)).toBe(expected);
  });

  it("refuses a route without a state machine ARN", () => {
    expect(() =>
      TriggerRoutesSchema.parse([{ rollout: "a", repository: "a", stateMachineArn: "nope" }]),
    ).toThrow(/state machine ARN/);
  });
});

describe("executionName", () => {
  it.each([
    ["checkout", DIGEST_A, 1],
    ["x".repeat(200), DIGEST_B, 123456],
    ["weird name/with:chars", DIGEST_A, 2],
    ["---", DIGEST_A, 1],
  ])("is deterministic, valid and ≤ 80 chars (%s, gen %d)", (rollout, digest, generation) => {
    const name = executionName(rollout, digest, generation);
    expect(name).toBe(executionName(rollout, digest, generation));
    expect(name).toMatch(/^[A-Za-z0-9_-]{1,80}$/);
    expect(name.endsWith(`-g${generation}`)).toBe(true);
  });

  it("differs by digest and by generation", () => {
    expect(executionName("checkout", DIGEST_A, 1)).toBe(`checkout-${"a1".repeat(12)}-g1`);
    expect(executionName("checkout", DIGEST_A, 1)).not.toBe(executionName("checkout", DIGEST_B, 1));
    expect(executionName("checkout", DIGEST_A, 1)).not.toBe(executionName("checkout", DIGEST_A, 2));
  });
});

describe("decideTrigger", () => {
  const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
  const push = (digest: string, time: number, tag = "v1"): ImagePush => ({
    repository: "checkout",
    digest,
    tag,
    image: `r/checkout@${digest}`,
    eventId: `e-${digest.slice(7, 9)}-${time}`,
    eventTime: time,
  });
  const accepted = (digest: string, time: number, generation: number, executionArn: string | null = null) =>
    ({
      ...newRolloutItem("checkout", NOW),
      version: 1,
      updatedAt: NOW,
      executionArn,
      trigger: {
        repository: "checkout",
        digest,
        tag: "v1",
        image: `r/checkout@${digest}`,
        eventId: "e",
        eventTime: time,
        generation,
        executionName: executionName("checkout", digest, generation),
        acceptedAt: NOW,
      },
    }) as RolloutItem;

  it("starts generation 1 for the first push ever", () => {
    expect(decideTrigger(undefined, push(DIGEST_A, NOW), "checkout", NOW)).toEqual({
      kind: "start",
      generation: 1,
      executionName: executionName("checkout", DIGEST_A, 1),
    });
  });

  it("treats the same digest as a duplicate, re-issuing the start only until Begin recorded it", () => {
    const item = accepted(DIGEST_A, NOW, 4);
    expect(decideTrigger(item, push(DIGEST_A, NOW + 5_000, "other-tag"), "checkout", NOW)).toMatchObject({
      kind: "duplicate",
      needsStart: true,
    });
    const recorded = accepted(
      DIGEST_A,
      NOW,
      4,
      `${SM.replace("stateMachine", "execution")}:${executionName("checkout", DIGEST_A, 4)}`,
    );
    expect(decideTrigger(recorded, push(DIGEST_A, NOW), "checkout", NOW)).toMatchObject({
      needsStart: false,
    });
    expect(decideTrigger(item, push(DIGEST_A, NOW), "checkout", NOW + RECOVERY_WINDOW_MS)).toMatchObject({
      needsStart: false,
    });
  });

  it("ignores an older push that arrives after a newer one was accepted", () => {
    const decision = decideTrigger(accepted(DIGEST_B, NOW, 2), push(DIGEST_A, NOW - 1_000), "checkout", NOW);
    expect(decision.kind).toBe("stale");
    expect(decision.kind === "stale" && decision.message).toMatch(/older than the accepted push/);
  });

  it("starts the next generation for a newer (or same-second) push of another digest", () => {
    expect(
      decideTrigger(accepted(DIGEST_A, NOW, 2), push(DIGEST_B, NOW + 1_000), "checkout", NOW),
    ).toMatchObject({
      kind: "start",
      generation: 3,
    });
    expect(decideTrigger(accepted(DIGEST_A, NOW, 2), push(DIGEST_B, NOW), "checkout", NOW)).toMatchObject({
      kind: "start",
    });
  });
});
