import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
  }, 90_000);
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
  }, 120_000);

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
  }, 120_000);

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
  }, 180_000);
});
