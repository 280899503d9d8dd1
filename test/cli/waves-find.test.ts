import { runWithEnv } from "@sfn-rollouts/test-support/cli";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { findRelease, passesOfCoordinator, whyUnreadable } from "../../cli/commands/waves-find.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import { type Runtime, startRuntime } from "../../local/runtime.ts";
import { CLI_ENV_KEYS } from "../../local/stack.ts";
import { parseRollout, readSourcesSync, resolveWaves } from "../../statemachine/index.ts";
import { compileWaves, wavePlaceholders } from "../../statemachine/waves-compile.ts";

/**
 * How `rollouts waves` reads a release from its coordinator: the passes its definition starts, and
 * a row saying why for each pass it cannot read. The whole path on a real release runs in
 * test/integration/waves.test.ts.
 */

const spec = parseRollout(readSourcesSync(["examples/waves.yaml"], [])).spec;

/** The coordinator's definition as deployed: each pass's state machine (and role) substituted. */
function coordinator(arns: { eu: string; rest: string; role: string }): Record<string, unknown> {
  const resolved = resolveWaves(spec.waves ?? { list: [], onFailure: "rollback-all" }, [
    { region: "eu-west-1" },
    { region: "us-east-1", account: "222222222222" },
  ] as never);
  expect(resolved.problems).toEqual([]);
  const passes = resolved.passes.map((p) => ({
    ...p,
    target: { ...p.target, crossAccount: p.target.account !== undefined },
  }));
  const values: Record<string, string> = {
    [wavePlaceholders(1).stateMachineArn]: arns.eu,
    [wavePlaceholders(2).stateMachineArn]: arns.rest,
    [wavePlaceholders(2).roleArn]: arns.role,
  };
  const text = JSON.stringify(compileWaves(spec, passes)).replace(
    /\$\{([^}]+)\}/g,
    (whole, key: string) => values[key] ?? whole,
  );
  return JSON.parse(text) as Record<string, unknown>;
}

const EU = "arn:aws:states:eu-west-1:111111111111:stateMachine:shop-eu";
const REST = "arn:aws:states:us-east-1:222222222222:stateMachine:shop-rest";
const ROLE = "arn:aws:iam::222222222222:role/shop-waves-rest";

describe("passesOfCoordinator", () => {
  it("lists the passes in order, with region, account and role, and not the rollback's Tasks", () => {
    const definition = coordinator({ eu: EU, rest: REST, role: ROLE });
    // rollback-all: Undo-Pass01-eu starts eu's state machine again; it is not a pass.
    expect(Object.keys(definition.States as object)).toContain("Undo-Pass01-eu");
    expect(passesOfCoordinator(definition, "shop-waves")).toEqual([
      { pass: "eu", stateMachineArn: EU, region: "eu-west-1", account: "111111111111" },
      { pass: "rest", stateMachineArn: REST, region: "us-east-1", account: "222222222222", roleArn: ROLE },
    ]);
  });

  it("refuses a definition that is not a coordinator's, naming where and why", () => {
    expect(() => passesOfCoordinator({}, "arn:x")).toThrow("arn:x: the definition has no States");
    expect(() => passesOfCoordinator({ States: { A: { Type: "Succeed" } } }, "arn:x")).toThrow(
      "arn:x: the definition starts no pass: not a release's coordinator",
    );
    const unsubstituted = coordinator({ eu: "${WavePass1StateMachineArn}", rest: REST, role: ROLE });
    expect(() => passesOfCoordinator(unsubstituted, "arn:x")).toThrow(
      'arn:x: state Pass01-eu: Parameters.StateMachineArn "${WavePass1StateMachineArn}" is not a state machine ARN',
    );
  });
});

describe("rollouts waves: a pass it cannot read is a row saying why", () => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await startRuntime({
      definitions: [
        // A state machine of this account with no table tag (deployed by something else).
        { name: "shop-eu", definition: { StartAt: "Done", States: { Done: { Type: "Succeed" } } } },
      ],
    });
    const eu = runtime.stateMachineArn("shop-eu");
    runtime.sfn.createStateMachine({
      name: "shop-waves",
      definition: coordinator({ eu, rest: REST, role: ROLE }),
    });
  });
  afterAll(async () => {
    vi.unstubAllEnvs();
    await runtime?.close();
  });

  it("says that another account refused these credentials, and only then", () => {
    const denied = Object.assign(
      new Error("User: arn:aws:sts::111111111111:assumed-role/x is not authorized"),
      {
        name: "AccessDeniedException",
      },
    );
    expect(whyUnreadable(denied, "222222222222")).toBe(
      "cannot read account 222222222222 with these credentials (run with that account's): AccessDeniedException: User: arn:aws:sts::111111111111:assumed-role/x is not authorized",
    );
    expect(whyUnreadable(denied, undefined)).toBe(
      "AccessDeniedException: User: arn:aws:sts::111111111111:assumed-role/x is not authorized",
    );
    const gone = Object.assign(new Error("Requested resource not found"), {
      name: "ResourceNotFoundException",
    });
    // The store wraps the SDK's error: its cause is what is shown.
    expect(whyUnreadable(new Error("store unavailable", { cause: gone }), "222222222222")).toBe(
      "ResourceNotFoundException: Requested resource not found",
    );
  });

  it("for a pass's item, takes the coordinator that started its execution, whatever its name", async () => {
    runtime.sfn.createStateMachine({
      name: "shop-release",
      definition: coordinator({ eu: runtime.stateMachineArn("shop-eu"), rest: REST, role: ROLE }),
    });
    const parent = `${runtime.stateMachineArn("shop-release").replace(":stateMachine:", ":execution:")}:r1`;
    const child = runtime.sfn.startExecution({
      stateMachineArn: runtime.stateMachineArn("shop-eu"),
      name: "shop-child",
      input: JSON.stringify({ rollout: "shop", AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID: parent }),
    });
    // The SDK reads its endpoints and region from the environment, as the CLI's users set them.
    const env = Object.fromEntries(CLI_ENV_KEYS.map((k) => [k, runtime.env[k] ?? ""]));
    for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v);
    const item = { name: "shop", executionArn: child.executionArn } as RolloutItem;
    const found = await findRelease("shop", { item, env });
    expect(found?.coordinatorArn).toBe(runtime.stateMachineArn("shop-release"));
    expect(found?.rows.map((r) => r.pass)).toEqual(["eu", "rest"]);
    // An execution no coordinator started: the one named <rollout>-waves in this region.
    const alone = runtime.sfn.startExecution({
      stateMachineArn: runtime.stateMachineArn("shop-eu"),
      name: "alone",
    });
    const byName = await findRelease("shop", { item: { ...item, executionArn: alone.executionArn }, env });
    expect(byName?.coordinatorArn).toBe(runtime.stateMachineArn("shop-waves"));
    expect(await findRelease("cart", { env })).toBeUndefined();
    vi.unstubAllEnvs();
  });

  it("with a home region, looks for <rollout>-waves there when neither the execution nor a tag names it", async () => {
    const home = "arn:aws:states:eu-west-1:111111111111:stateMachine:cart-waves";
    runtime.sfn.createStateMachine({
      name: "cart-waves",
      arn: home,
      definition: coordinator({ eu: runtime.stateMachineArn("shop-eu"), rest: REST, role: ROLE }),
    });
    // A pass deployed without the tag (WaveCoordinator alone), run by a person, not the coordinator.
    runtime.sfn.createStateMachine({
      name: "cart-us",
      definition: { StartAt: "Done", States: { Done: { Type: "Succeed" } } },
    });
    const run = runtime.sfn.startExecution({
      stateMachineArn: runtime.stateMachineArn("cart-us"),
      name: "by-hand",
    });
    const env = Object.fromEntries(CLI_ENV_KEYS.map((k) => [k, runtime.env[k] ?? ""]));
    for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v);
    const item = { name: "cart", executionArn: run.executionArn } as RolloutItem;
    expect(runtime.env.AWS_REGION).toBe("us-east-1");
    expect(await findRelease("cart", { item, env })).toBeUndefined();
    expect((await findRelease("cart", { item, env, homeRegion: "eu-west-1" }))?.coordinatorArn).toBe(home);
    expect(await findRelease("cart", { item, env, homeRegion: "ap-southeast-2" })).toBeUndefined();
    vi.unstubAllEnvs();
  });

  it("for an execution no coordinator started, takes the one its state machine's tag names", async () => {
    // The home region's coordinator, in another region than this one's shop-waves.
    const home = "arn:aws:states:eu-west-1:111111111111:stateMachine:shop-waves";
    runtime.sfn.createStateMachine({
      name: "shop-waves",
      arn: home,
      definition: coordinator({ eu: runtime.stateMachineArn("shop-eu"), rest: REST, role: ROLE }),
    });
    const tagged = (name: string, coordinatorArn: string) => {
      runtime.sfn.createStateMachine({
        name,
        definition: { StartAt: "Done", States: { Done: { Type: "Succeed" } } },
        tags: { "sfn-rollouts:coordinator": coordinatorArn },
      });
      return runtime.sfn.startExecution({ stateMachineArn: runtime.stateMachineArn(name), name: "retried" });
    };
    const env = Object.fromEntries(CLI_ENV_KEYS.map((k) => [k, runtime.env[k] ?? ""]));
    for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v);
    const retried = tagged("shop-us", home);
    const item = { name: "shop", executionArn: retried.executionArn } as RolloutItem;
    expect((await findRelease("shop", { item, env }))?.coordinatorArn).toBe(home);
    // A tag naming another rollout's coordinator is not this release's: shop-waves by name here.
    const other = tagged("shop-ap", "arn:aws:states:eu-west-1:111111111111:stateMachine:cart-waves");
    const byName = await findRelease("shop", { item: { ...item, executionArn: other.executionArn }, env });
    expect(byName?.coordinatorArn).toBe(runtime.stateMachineArn("shop-waves"));
    vi.unstubAllEnvs();
  });

  it("names the missing tag, and the state machine the other account does not show", async () => {
    const env = Object.fromEntries(CLI_ENV_KEYS.map((k) => [k, runtime.env[k] ?? ""]));
    const shown = await runWithEnv(env, "waves", "shop");
    expect(shown.err).toBe("");
    expect(shown.code).toBe(0);
    const rows = shown.out.trim().split("\n");
    expect(rows[0]).toBe(`Coordinator: ${runtime.stateMachineArn("shop-waves")}, never run`);
    expect(rows[2]).toMatch(
      /^eu\s+local\s+\? Unknown\s+-\s+-\s+-\s+-\s+its state machine arn:aws:states:local:\d+:stateMachine:shop-eu has no sfn-rollouts:table tag naming its table$/,
    );
    expect(rows[3]).toMatch(
      /^rest\s+us-east-1\s+\? Unknown\s+-\s+-\s+-\s+-\s+ResourceNotFound: Resource not found: 'arn:aws:states:us-east-1:222222222222:stateMachine:shop-rest'$/,
    );
    expect(rows).toHaveLength(4);
  });
});
