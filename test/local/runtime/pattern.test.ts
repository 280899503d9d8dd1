import { describe, expect, it } from "vitest";
import { targetInput } from "../../../local/events/bus.ts";
import { matchesPattern } from "../../../local/events/pattern.ts";

const push = {
  version: "0" as const,
  id: "e1",
  "detail-type": "ECR Image Action",
  source: "aws.ecr",
  account: "000000000000",
  time: "2026-01-01T00:00:00Z",
  region: "local",
  resources: [],
  detail: {
    "action-type": "PUSH",
    result: "SUCCESS",
    "repository-name": "shop/api",
    "image-tag": "v2",
    size: 42,
  },
};

describe("EventBridge pattern matching", () => {
  it.each([
    ["exact values, nested", { source: ["aws.ecr"], detail: { "action-type": ["PUSH"] } }, true],
    ["a list is an OR", { detail: { "action-type": ["DELETE", "PUSH"] } }, true],
    ["a mismatch", { detail: { "action-type": ["DELETE"] } }, false],
    ["prefix", { detail: { "repository-name": [{ prefix: "shop/" }] } }, true],
    ["suffix", { detail: { "repository-name": [{ suffix: "/web" }] } }, false],
    ["anything-but value", { detail: { result: [{ "anything-but": "FAILURE" }] } }, true],
    ["anything-but list", { detail: { result: [{ "anything-but": ["SUCCESS"] }] } }, false],
    ["anything-but prefix", { detail: { "image-tag": [{ "anything-but": { prefix: "v" } }] } }, false],
    ["exists true", { detail: { "image-tag": [{ exists: true }] } }, true],
    ["exists false", { detail: { "image-digest": [{ exists: false }] } }, true],
    ["exists false on a present field", { detail: { "image-tag": [{ exists: false }] } }, false],
    ["numeric range", { detail: { size: [{ numeric: [">", 10, "<=", 42] }] } }, true],
    ["numeric out of range", { detail: { size: [{ numeric: ["<", 10] }] } }, false],
    ["a missing field", { detail: { missing: ["x"] } }, false],
    ["$or", { $or: [{ source: ["x"] }, { detail: { result: ["SUCCESS"] } }] }, true],
    ["equals-ignore-case", { detail: { result: [{ "equals-ignore-case": "success" }] } }, true],
    ["wildcard", { detail: { "repository-name": [{ wildcard: "shop/*" }] } }, true],
  ])("%s", (_name, pattern, expected) => {
    expect(matchesPattern(pattern, push)).toBe(expected);
  });

  it("matches any element of an array field", () => {
    expect(matchesPattern({ resources: ["arn:b"] }, { ...push, resources: ["arn:a", "arn:b"] })).toBe(true);
  });
});

describe("target input", () => {
  it("is the whole event by default, and follows InputPath and InputTransformer", () => {
    expect(JSON.parse(targetInput({ id: "t", arn: "a" }, push, "r"))).toEqual(push);
    expect(JSON.parse(targetInput({ id: "t", arn: "a", inputPath: "$.detail" }, push, "r"))).toEqual(
      push.detail,
    );
    const transformed = targetInput(
      {
        id: "t",
        arn: "a",
        inputTransformer: {
          inputPathsMap: { repo: "$.detail.repository-name", size: "$.detail.size" },
          inputTemplate: '{"repository": "<repo>", "size": <size>, "rule": "<aws.events.rule-name>"}',
        },
      },
      push,
      "ecr-push",
    );
    expect(JSON.parse(transformed)).toEqual({ repository: "shop/api", size: 42, rule: "ecr-push" });
  });

  it("fills a placeholder inside a longer string with the value's text, escaped, as EventBridge does", () => {
    const event = { ...push, detail: { ...push.detail, note: 'said "no"\nthen left' } };
    const transformed = targetInput(
      {
        id: "t",
        arn: "a",
        inputTransformer: {
          inputPathsMap: { repo: "$.detail.repository-name", size: "$.detail.size", note: "$.detail.note" },
          inputTemplate:
            '{"text": "Push to <repo> of <size> bytes: <note>", "quoted": "\\"<repo>\\"", "size": <size>}',
        },
      },
      event,
      "r",
    );
    expect(JSON.parse(transformed)).toEqual({
      text: 'Push to shop/api of 42 bytes: said "no"\nthen left',
      quoted: '"shop/api"',
      size: 42,
    });
  });

  it("fills a placeholder whose path the event lacks with nothing, as EventBridge does (a push by digest only has no image-tag)", () => {
    const { "image-tag": _, ...untagged } = push.detail;
    const transformed = targetInput(
      {
        id: "t",
        arn: "a",
        inputTransformer: {
          inputPathsMap: { repo: "$.detail.repository-name", tag: "$.detail.image-tag" },
          inputTemplate: '{"repository": "<repo>", "tag": "<tag>", "image": "<repo>:<tag>"}',
        },
      },
      { ...push, detail: untagged },
      "r",
    );
    expect(JSON.parse(transformed)).toEqual({ repository: "shop/api", tag: "", image: "shop/api:" });
  });
});
