import { afterAll, beforeAll, describe, it } from "vitest";
import { deployToLocalStack, type LocalStackDeployment } from "./localstack.ts";
import { SCENARIOS } from "./scenarios.ts";

/**
 * The integration scenarios on LocalStack (`npm run test:localstack` with LOCALSTACK_ENDPOINT
 * set): the stack deployed with cdklocal, each scenario on its own rollout, in real time. Without
 * LocalStack they are skipped here; `npm test` runs every scenario on the embedded runtime.
 *
 * moto's server cannot play LocalStack's part for any of them: each scenario is a whole rollout
 * whose workflow invokes the handler Lambdas of the deployed stack, and moto runs a Lambda function
 * only in a Docker container. What moto can check, each adapter against its AWS service, is in
 * `test/aws/` (`docs/runtime.md`, "The AWS peer: moto").
 */
const cases = SCENARIOS.filter((s) => !s.inProcess);

describe.skipIf(!process.env.LOCALSTACK_ENDPOINT)("a rollout on LocalStack", () => {
  let deployment: LocalStackDeployment;
  beforeAll(async () => {
    deployment = await deployToLocalStack(cases.map((c) => c.options));
  }, 900_000);
  afterAll(async () => {
    await deployment?.close();
  }, 300_000);

  cases.forEach((scenario, i) => {
    it(scenario.name, () => scenario.run(deployment.scenario(i)), 600_000);
  });
});
