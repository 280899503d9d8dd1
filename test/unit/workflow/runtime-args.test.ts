import { describe, expect, it } from "vitest";
import {
  InvalidVersionValueError,
  resolveRuntimeArgs,
  runtimeValueProblem,
} from "../../../functions/workflow/runtime-args.ts";
import { type AnalysisSpec, AnalysisSpecSchema } from "../../../statemachine/spec.ts";

const DIGEST = `sha256:${"ab".repeat(32)}`;
const analysis: AnalysisSpec = AnalysisSpecSchema.parse({
  templates: [
    {
      name: "t",
      kind: "inline",
      metrics: [
        {
          name: "m",
          provider: {
            prometheus: {
              address: "http://p:9090",
              query:
                'up{version="{{rollout.latest}}",stable="{{rollout.stable}}",digest="{{rollout.digest}}"}',
            },
          },
        },
      ],
    },
  ],
});
const queryOf = (a: AnalysisSpec) => a.templates[0]?.metrics[0]?.provider.prometheus?.query;

describe("values from outside the spec, before they meet a query", () => {
  it("an image tag, a digest, or nothing yet (no stable version) fill their placeholders", () => {
    const resolved = resolveRuntimeArgs(analysis, { latest: "v2.1_rc-1", stable: "", digest: DIGEST });
    expect(queryOf(resolved)).toBe(`up{version="v2.1_rc-1",stable="",digest="${DIGEST}"}`);
    expect(queryOf(resolveRuntimeArgs(analysis, { latest: DIGEST, stable: "v1", digest: DIGEST }))).toContain(
      `version="${DIGEST}"`,
    );
  });

  it.each([
    ["latest", 'v1"} or vector(1) #'],
    ["stable", "v1\nnext"],
    ["latest", "-v1"],
    ["latest", "x".repeat(301)],
    ["digest", "v1"],
    ["digest", `sha256:${"AB".repeat(32)}`],
  ] as const)("a %s of %j is refused with InvalidVersionValueError, never substituted", (key, value) => {
    const values = { latest: "v2", stable: "v1", digest: DIGEST, [key]: value };
    expect(() => resolveRuntimeArgs(analysis, values)).toThrow(InvalidVersionValueError);
    expect(runtimeValueProblem(key, value)).toMatch(
      /^\{\{rollout\.\w+\}\} would be ".*", which is not an image/,
    );
  });
});
