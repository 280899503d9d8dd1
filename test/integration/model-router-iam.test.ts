import { startEmbeddedRollout } from "@sfn-rollouts/test-support/embedded-rollout";
import { digest } from "@sfn-rollouts/test-support/fake-rollout";
import { type IamRouter, startIamRouter } from "@sfn-rollouts/test-support/iam-router";
import { analysisSpec, canarySpec } from "@sfn-rollouts/test-support/rollout-spec";
import { FakeTraffic } from "@sfn-rollouts/test-support/traffic";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { defaultProviders } from "../../functions/metrics/index.ts";
import { FORBIDDEN_BODY } from "../../local/aws/function-url.ts";
import { MetricSchema } from "../../statemachine/spec.ts";

/**
 * The compiled workflow in the embedded runtime judges a model through the router function behind
 * a Function URL whose auth is AWS_IAM: the analysis reads `/compare` with the shipped providers
 * (`defaultProviders()`, the credentials of the process), so only a signed read is answered.
 */
const region = "us-east-1";

let router: IamRouter;
beforeAll(async () => {
  router = await startIamRouter(region);
});
afterAll(() => router?.close());

async function rollOut(sigv4: boolean) {
  const metric = MetricSchema.parse({
    name: "compare",
    interval: 3,
    count: 1,
    successCondition: 'result.candidate.version == "v2" && result.primary.version == "v1"',
    provider: {
      samples: { address: router.url.url, primary: "v1", candidate: "v2", ...(sigv4 ? { sigv4: {} } : {}) },
    },
  });
  const w = await startEmbeddedRollout({
    spec: canarySpec([
      { kind: "setWeight", weight: 25 },
      { kind: "analysis", origin: "step", analysis: analysisSpec(metric) },
    ]),
    router: new FakeTraffic(),
    providers: defaultProviders(),
  });
  onTestFinished(() => w.close());
  expect(await w.rollOut({ digest: digest(1), tag: "v1" })).toEqual({ state: "Healthy" });
  await w.idle();
  const ending = await w.rollOut({ digest: digest(2), tag: "v2" });
  return { ending, item: await w.item() };
}

describe("a model rollout judged through an AWS_IAM Function URL", () => {
  it("promotes when the analysis signs its reads", async () => {
    const { ending, item } = await rollOut(true);
    expect(ending).toEqual({ state: "Healthy" });
    expect(item.stableRevision).toMatchObject({ digest: digest(2) });
  });

  it("rolls back when it reads unsigned: every measurement is the Function URL's 403", async () => {
    const { ending, item } = await rollOut(false);
    expect(ending.state).toBe("Aborted");
    expect(item.stableRevision).toMatchObject({ digest: digest(1) });
    expect(item.message).toContain(`received non 2xx response code: 403: ${FORBIDDEN_BODY}`);
  });
});
