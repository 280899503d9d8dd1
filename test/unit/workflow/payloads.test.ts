import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import {
  AbortPayloadSchema,
  AwaitPayloadSchema,
  BeginPayloadSchema,
  CheckReadyPayloadSchema,
  PromotePayloadSchema,
  StartAnalysisPayloadSchema,
  StepPayloadSchema,
} from "../../../functions/workflow/payloads.ts";

const SCHEMAS: Record<string, z.ZodType> = {
  "${BeginFunctionArn}": BeginPayloadSchema,
  "${SetWeightFunctionArn}": StepPayloadSchema,
  "${CheckReadyFunctionArn}": CheckReadyPayloadSchema,
  "${AwaitFunctionArn}": AwaitPayloadSchema,
  "${StartAnalysisFunctionArn}": StartAnalysisPayloadSchema,
  "${PromoteFunctionArn}": PromotePayloadSchema,
  "${AbortFunctionArn}": AbortPayloadSchema,
};

/** What the JSONPath fields of the compiled payloads resolve to at run time. */
const PATHS: Record<string, unknown> = {
  $: {
    rollout: "demo",
    revision: { repository: "demo", image: "repo@sha256:ab", digest: "sha256:ab", tag: "v2" },
    trigger: { eventId: "e", eventTime: 1, generation: 1, executionName: "demo-ab-g1" },
  },
  "$$.Execution.Id": "arn:aws:states:us-east-1:123456789012:execution:demo:demo-ab-g1",
  "$.begin.context": {
    rollout: "demo",
    revision: 2,
    image: "repo@sha256:ab",
    digest: "sha256:ab",
    tag: "v2",
    executionArn: "arn:aws:states:us-east-1:123456789012:execution:demo:demo-ab-g1",
  },
  "$$.Task.Token": "token",
  "$.last.message": 'Metric "x" assessed Inconclusive',
  "$.error": { Error: "RolloutAborted", Cause: "why" },
};

function resolve(payload: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(payload)) {
    if (key.endsWith(".$")) {
      const path = value as string;
      if (!Object.hasOwn(PATHS, path)) throw new Error(`no value for ${path}`);
      out[key.slice(0, -2)] = PATHS[path];
    } else out[key] = value;
  }
  return out;
}

describe("the Task payloads of the compiled workflows parse with the handlers' schemas", () => {
  for (const file of ["canary", "blue-green", "model-shadow", "native"]) {
    it(`${file}.golden.json`, () => {
      const definition = JSON.parse(readFileSync(`test/statemachine/golden/${file}.golden.json`, "utf8")) as {
        States: Record<
          string,
          { Type: string; Parameters?: { FunctionName?: string; Payload?: Record<string, unknown> } }
        >;
      };
      let checked = 0;
      for (const [name, state] of Object.entries(definition.States)) {
        const fn = state.Parameters?.FunctionName;
        if (state.Type !== "Task" || !fn || !state.Parameters?.Payload) continue;
        const schema = SCHEMAS[fn];
        expect(schema, `${name}: ${fn}`).toBeDefined();
        const payload = resolve(state.Parameters.Payload);
        // The golden files use a placeholder target; the handlers take any settings object.
        const result = schema?.safeParse(payload);
        expect(result?.success ? "ok" : `${name}: ${JSON.stringify(result?.error.issues)}`).toBe("ok");
        checked++;
      }
      expect(checked).toBeGreaterThan(3);
    });
  }
});
