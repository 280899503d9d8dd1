import { SendTaskFailureCommand, SendTaskSuccessCommand } from "@aws-sdk/client-sfn";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HookEvent } from "../../functions/hooks/payload.ts";
import { localFunctionArn } from "../../local/asl/intrinsics.ts";
import type { LambdaHandler } from "../../local/aws/lambda.ts";
import { type LocalDynamo, startDynamo } from "../../local/dynamo.ts";
import { type LocalScenario, type LocalScenarioOptions, startScenario } from "./harness.ts";
import { at, done } from "./scenario.ts";

/**
 * Alarm rollback and lifecycle hooks on the synthesized stack in the embedded runtime: the alarm
 * rule and the trigger, the step boundaries' check, the hook function and its task token, with
 * the real handlers, in virtual time.
 */
describe("alarms and hooks on the embedded runtime", () => {
  let dynamo: LocalDynamo;
  let n = 0;
  const started: LocalScenario[] = [];
  const start = async (options: Omit<LocalScenarioOptions, "dynamo" | "tableName">) => {
    const s = await startScenario({ dynamo, tableName: `rollouts-safety-${++n}`, ...options });
    started.push(s);
    return s;
  };

  beforeAll(async () => {
    dynamo = await startDynamo("dynalite");
  });
  afterAll(async () => {
    for (const s of started) await s.close().catch(() => undefined);
    await dynamo?.close();
  });

  const ALARMS = { "rollouts.sfn/alarms": "demo-5xx, demo-latency" };

  it("an alarm going to ALARM during an analysis aborts the rollout within one second, naming the alarm and its reason", async () => {
    const s = await start({ annotations: ALARMS, pause: "{}" });
    await s.stack.setAlarm("demo-5xx", "OK", "Threshold Crossed: no datapoints were breaching");
    await s.stack.setAlarm("demo-latency", "OK");
    await s.push("v1");
    expect((await s.drive(done("v1")))?.phase).toBe("Healthy");
    await s.push("v2");
    // The first analysis (step 2) is running, with 25% of traffic on v2.
    const running = await s.drive(
      (item) => at("v2", ["Progressing"])(item) && item?.waitingFor === "analysis",
    );
    expect(running).toMatchObject({ weight: 25, waitingFor: "analysis" });

    const before = s.clock.now();
    const wall = performance.now();
    const reason =
      "Threshold Crossed: 1 out of the last 1 datapoints [12.0 (01/12/26 12:00:00)] was greater than the threshold (5.0)";
    await s.stack.setAlarm("demo-5xx", "ALARM", reason);
    let item = await s.item();
    for (let ms = 0; ms < 1000 && item?.phase !== "Degraded"; ms += 100) {
      await s.idle(100);
      item = await s.item();
    }
    const virtual = s.clock.now() - before;
    const real = performance.now() - wall;
    expect(item?.phase).toBe("Degraded");
    expect(item?.weight).toBe(0);
    expect(item?.message).toBe(
      `RolloutAborted: Rollout aborted update to revision 2: CloudWatch alarm "demo-5xx" is in ALARM: ${reason}`,
    );
    expect(virtual).toBeLessThanOrEqual(1000);
    expect(real).toBeLessThan(5000);
    expect(s.proxy.config()).toMatchObject({ weight: 0 });
    console.log(`alarm abort: ${virtual} ms of virtual time, ${real.toFixed(0)} ms of real time`);
  });

  it("an alarm already in ALARM stops the next step at its boundary: no traffic moves", async () => {
    const s = await start({ annotations: ALARMS });
    await s.stack.setAlarm("demo-5xx", "OK");
    await s.stack.setAlarm("demo-latency", "OK");
    await s.push("v1");
    expect((await s.drive(done("v1")))?.phase).toBe("Healthy");
    // Fired while nothing ran: the rule's abort finds no running rollout; the boundary check must.
    await s.stack.setAlarm("demo-latency", "ALARM", "p99 above 800 ms for 3 minutes");
    await s.push("v2");
    const item = await s.drive(done("v2"));
    expect(item?.phase).toBe("Degraded");
    expect(item?.message).toBe(
      'RolloutAborted: Rollout aborted update to revision 2: CloudWatch alarm "demo-latency" is in ALARM: p99 above 800 ms for 3 minutes',
    );
    expect(item?.events.map((e) => e.type)).not.toContain("RolloutStepCompleted");
    expect(s.proxy.config()).toMatchObject({ weight: 0 });
  });

  it("an alarm that does not exist aborts with its name; with ignore-poll-alarm-failure the rollout goes on", async () => {
    const strict = await start({ annotations: { "rollouts.sfn/alarms": "demo-5xx, demo-typo" } });
    await strict.stack.setAlarm("demo-5xx", "OK");
    await strict.push("v1");
    await strict.drive(done("v1"));
    await strict.push("v2");
    const item = await strict.drive(done("v2"));
    expect(item?.phase).toBe("Degraded");
    expect(item?.message).toContain('CloudWatch alarm "demo-typo" not found');

    const lenient = await start({
      annotations: {
        "rollouts.sfn/alarms": "demo-5xx, demo-typo",
        "rollouts.sfn/ignore-poll-alarm-failure": "true",
      },
    });
    await lenient.stack.setAlarm("demo-5xx", "OK");
    await lenient.push("v1");
    await lenient.drive(done("v1"));
    await lenient.push("v2");
    expect((await lenient.drive(done("v2")))?.phase).toBe("Healthy");
  });

  /** A local hook function: records what it is given, then answers its token with `answer`. */
  function hook(answer: "pass" | "fail" | "silent") {
    const seen: HookEvent[] = [];
    let scenario: LocalScenario | undefined;
    const handler = async (event: unknown) => {
      const e = event as HookEvent;
      seen.push(e);
      if (!scenario) throw new Error("the scenario has not started");
      if (answer === "pass") {
        await scenario.sfn.send(
          new SendTaskSuccessCommand({ taskToken: e.taskToken, output: JSON.stringify({ ok: true }) }),
        );
      } else if (answer === "fail") {
        await scenario.sfn.send(
          new SendTaskFailureCommand({
            taskToken: e.taskToken,
            error: "SmokeFailed",
            cause: "GET /checkout answered 500 three times",
          }),
        );
      }
      return { accepted: true };
    };
    return { seen, handler, attach: (s: LocalScenario) => (scenario = s) };
  }

  it("a passing hook is asked before traffic and after each weight, with the rollout, revision and weight; the rollout is promoted", async () => {
    const smoke = hook("pass");
    const s = await start({
      annotations: {
        "rollouts.sfn/hook-before-traffic": localFunctionArn("smoke"),
        "rollouts.sfn/hook-after-traffic": localFunctionArn("smoke"),
        "rollouts.sfn/hook-after-promotion": localFunctionArn("smoke"),
      },
      hookFunctions: { smoke: smoke.handler },
    });
    smoke.attach(s);
    await s.push("v1");
    expect((await s.drive(done("v1")))?.phase).toBe("Healthy");
    expect(smoke.seen).toEqual([]); // the first revision has nothing to test against
    await s.push("v2");
    const item = await s.drive(done("v2"));
    expect(item?.phase).toBe("Healthy");
    expect(smoke.seen.map((e) => [e.hook, e.weight, e.stepIndex])).toEqual([
      ["beforeTraffic", 0, null],
      ["afterTraffic", 25, 0],
      ["afterTraffic", 50, 2],
      ["afterPromotion", 50, 5],
    ]);
    expect(smoke.seen[0]).toMatchObject({
      type: "sfn-rollouts.hook",
      rollout: "demo",
      revision: 2,
      tag: "v2",
      timeoutSeconds: 600,
      heartbeatSeconds: null,
      executionArn: item?.executionArn,
    });
  });

  it("a failing hook aborts the rollout with its own error and message", async () => {
    const smoke = hook("fail");
    const s = await start({
      annotations: { "rollouts.sfn/hook-after-traffic": localFunctionArn("smoke") },
      hookFunctions: { smoke: smoke.handler },
    });
    smoke.attach(s);
    await s.push("v1");
    await s.drive(done("v1"));
    await s.push("v2");
    const item = await s.drive(done("v2"));
    expect(item?.phase).toBe("Degraded");
    expect(item?.weight).toBe(0);
    expect(item?.message).toBe(
      `RolloutAborted: Rollout aborted update to revision 2: afterTraffic hook ${localFunctionArn("smoke")} failed: SmokeFailed: GET /checkout answered 500 three times`,
    );
    expect(smoke.seen.map((e) => e.weight)).toEqual([25]);
  });

  it("a hook that gives no verdict in its timeout aborts the rollout, saying so", async () => {
    const smoke = hook("silent");
    const s = await start({
      annotations: {
        "rollouts.sfn/hook-before-traffic": localFunctionArn("smoke"),
        "rollouts.sfn/hook-timeout": "30s",
      },
      hookFunctions: { smoke: smoke.handler },
    });
    smoke.attach(s);
    await s.push("v1");
    await s.drive(done("v1"));
    await s.push("v2");
    const waiting = await s.drive((i) => i?.waitingFor === "hook");
    expect(waiting).toMatchObject({ phase: "Progressing", waitingFor: "hook", weight: 0 });
    // A person cannot answer a hook's token for it.
    const promoted = await s.cli("promote", s.name);
    expect(promoted.code).not.toBe(0);
    expect(`${promoted.out}${promoted.err}`).toContain("waits for a lifecycle hook's verdict");
    const started = s.clock.now();
    const item = await s.drive(done("v2"), { rps: 1 });
    expect(item?.phase).toBe("Degraded");
    expect(item?.message).toBe(
      `RolloutAborted: Rollout aborted update to revision 2: beforeTraffic hook ${localFunctionArn("smoke")} gave no verdict within 30s`,
    );
    expect(s.clock.now() - started).toBeGreaterThanOrEqual(29_000);
    expect(s.clock.now() - started).toBeLessThanOrEqual(32_000);
  });

  /**
   * Wraps the `hook` function: once the real handler returned, `after(attempt, again)` decides
   * what the invocation answers (`again` runs the real handler once more with the same event).
   */
  const wrapHook =
    (after: (attempt: number, again: () => Promise<unknown>) => Promise<unknown>) =>
    (name: string, handler: LambdaHandler): LambdaHandler => {
      if (name !== "hook") return handler;
      let attempts = 0;
      return async (event, context) => {
        await handler(event, context);
        return after(++attempts, async () => await handler(event, context));
      };
    };

  it("a hook Lambda invoked again with the same token does not start the hook function again", async () => {
    const smoke = hook("pass");
    const s = await start({
      annotations: { "rollouts.sfn/hook-after-traffic": localFunctionArn("smoke") },
      hookFunctions: { smoke: smoke.handler },
      // Every invocation is delivered twice with the same event (an invocation repeated after its
      // answer was lost): the second must find the hook started.
      wrap: wrapHook((_attempt, again) => again()),
    });
    smoke.attach(s);
    await s.push("v1");
    await s.drive(done("v1"));
    await s.push("v2");
    const item = await s.drive(done("v2"));
    expect(item?.phase).toBe("Healthy");
    expect(smoke.seen.map((e) => [e.hook, e.weight])).toEqual([
      ["afterTraffic", 25],
      ["afterTraffic", 50],
    ]);
  });

  it("a hook Task retried with a new token after the hook function started does not start it again: the rollout aborts, saying why", async () => {
    const smoke = hook("silent");
    const attempts: number[] = [];
    const s = await start({
      annotations: { "rollouts.sfn/hook-before-traffic": localFunctionArn("smoke") },
      hookFunctions: { smoke: smoke.handler },
      // The first attempt starts the hook function, then the Lambda service fails the invocation:
      // Step Functions retries the Task, with a new token.
      wrap: wrapHook(async (attempt) => {
        attempts.push(attempt);
        if (attempt === 1) {
          throw Object.assign(new Error("the answer was lost"), { name: "Lambda.ServiceException" });
        }
        return { invoked: localFunctionArn("smoke") };
      }),
    });
    smoke.attach(s);
    await s.push("v1");
    await s.drive(done("v1"));
    await s.push("v2");
    const item = await s.drive(done("v2"));
    expect(attempts).toEqual([1, 2]);
    expect(smoke.seen.map((e) => e.hook)).toEqual(["beforeTraffic"]);
    expect(item?.phase).toBe("Degraded");
    expect(item?.weight).toBe(0);
    expect(item?.message).toBe(
      `RolloutAborted: Rollout aborted update to revision 2: beforeTraffic hook ${localFunctionArn("smoke")} failed: HookAlreadyStarted: the hook function was already started for this wait, and Step Functions then retried the hook Task with a new task token; the running hook answers the earlier token, which is no longer accepted, so the hook is not started a second time and the rollout stops here`,
    );
  });

  it("an alarm during a hook's wait ends the wait at once through the abort channel", async () => {
    const smoke = hook("silent");
    const s = await start({
      annotations: { ...ALARMS, "rollouts.sfn/hook-after-traffic": localFunctionArn("smoke") },
      hookFunctions: { smoke: smoke.handler },
    });
    smoke.attach(s);
    await s.stack.setAlarm("demo-5xx", "OK");
    await s.stack.setAlarm("demo-latency", "OK");
    await s.push("v1");
    await s.drive(done("v1"));
    await s.push("v2");
    await s.drive((i) => i?.waitingFor === "hook");
    await s.stack.setAlarm("demo-latency", "ALARM", "p99 above 800 ms");
    await s.idle(100);
    const item = await s.item();
    expect(item?.phase).toBe("Degraded");
    expect(item?.message).toBe(
      'RolloutAborted: Rollout aborted update to revision 2: CloudWatch alarm "demo-latency" is in ALARM: p99 above 800 ms',
    );
  });
});
