import { describe, expect, it } from "vitest";
import { globMatches } from "../../functions/trigger/routes.ts";
import { imageTagFilter, tagPatternProblem, tagPatternRegExp } from "../../infra/tag-pattern.ts";

describe("tag patterns → EventBridge image-tag filters", () => {
  it.each([
    [undefined, undefined],
    ["*", undefined],
    ["stable", ["stable"]],
    ["v*", [{ prefix: "v" }]],
    ["release-*-eu", [{ wildcard: "release-*-eu" }]],
    ["*-rc", [{ wildcard: "*-rc" }]],
    ["v1.?", [{ wildcard: "v1.*" }]],
  ])("%s → %j", (pattern, filter) => {
    expect(imageTagFilter(pattern)).toEqual(filter);
  });

  it.each([
    ["v 1", true],
    ["a/b", true],
    ["", true],
    ["x".repeat(129), true],
    ["v**", true],
    ["v1.*", false],
    ["release-?_x", false],
  ])("problem with %j: %s", (pattern, bad) => {
    expect(tagPatternProblem(pattern) !== undefined).toBe(bad);
  });

  it("admits the same tags as the trigger's glob match, so the rule never drops what the trigger wants", () => {
    const tags = [
      "v1",
      "v1.2",
      "v",
      "release-7-eu",
      "release--eu",
      "release-7-us",
      "stable",
      "1.0-rc",
      "v1.x",
    ];
    for (const pattern of ["v*", "release-*-eu", "stable", "*-rc", "v1.?"]) {
      for (const tag of tags) {
        expect(tagPatternRegExp(pattern).test(tag), `${pattern} ${tag}`).toBe(globMatches(pattern, tag));
      }
    }
  });
});
