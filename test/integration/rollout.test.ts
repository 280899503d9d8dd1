import { afterAll, beforeAll, describe, it } from "vitest";
import { type LocalDynamo, startDynamo } from "../../local/dynamo.ts";
import { type LocalScenario, startScenario } from "./harness.ts";
import { SCENARIOS } from "./scenarios.ts";

/**
 * The whole workflow on one machine: the synthesized stack (state machine, rule, functions, table)
 * in the embedded runtime, the real handlers and SDK clients, real demo services behind the real
 * proxy, in virtual time. Every scenario runs on dynalite and on Amazon's DynamoDB Local (Java).
 */
describe.each(["dynalite", "dynamodb-local"] as const)("a rollout on the embedded runtime (%s)", (engine) => {
  let dynamo: LocalDynamo;
  let n = 0;
  const started: LocalScenario[] = [];

  beforeAll(async () => {
    dynamo = await startDynamo(engine);
  });
  afterAll(async () => {
    for (const s of started) await s.close().catch(() => undefined);
    await dynamo?.close();
  });

  for (const scenario of SCENARIOS) {
    it(scenario.name, async () => {
      const s = await startScenario({
        dynamo,
        tableName: `rollouts-${engine}-${++n}`,
        ...scenario.options,
      });
      started.push(s);
      await scenario.run(s);
    });
  }
});
