import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SendTaskSuccessCommand } from "@aws-sdk/client-sfn";
import { runWithEnv } from "@sfn-rollouts/test-support/cli";
import { type IamCall, IamCallRecorder } from "@sfn-rollouts/test-support/iam-calls";
import {
  denials,
  type FunctionRole,
  functionRoles,
  type GrantUse,
  grantUse,
} from "@sfn-rollouts/test-support/iam-policies";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import type { HookEvent } from "../../functions/hooks/payload.ts";
import { registryHost } from "../../functions/trigger/event.ts";
import { LOCAL_ACCOUNT, LOCAL_REGION, localFunctionArn } from "../../local/asl/intrinsics.ts";
import { type ModelServer, startModel } from "../../local/demo/model.ts";
import { MODEL_VERSIONS } from "../../local/demo/model-rollout.ts";
import { finished } from "../../local/demo/model-stack.ts";
import { type LocalDynamo, startDynamo } from "../../local/dynamo.ts";
import { CLI_ENV_KEYS, startEmbeddedStack } from "../../local/stack.ts";
import { type LocalScenario, startScenario } from "./harness.ts";
import { covers, IAM_UNUSED_EXCEPTIONS } from "./iam-exceptions.ts";
import { at, done, type ScenarioOptions } from "./scenario.ts";
import { SCENARIOS } from "./scenarios.ts";

/**
 * IAM on every call: while a representative set of rollouts runs on the synthesized stack in the
 * embedded runtime, every AWS SDK call each function makes is recorded (a middleware on its
 * clients) with the action and resource ARNs IAM authorizes it against, then evaluated with
 * `@cloud-copilot/iam-simulate` against that function's role's statements in the same template.
 * A call the role does not allow fails; so does a granted action no call needed, unless
 * `IAM_UNUSED_EXCEPTIONS` says why.
 */
const PICKED = [
  "promotes a healthy candidate through every step",
  "aborts a failing candidate with Argo's message and puts the weight back at 0",
  "waits at a pause without a duration until rollouts promote sends the token",
  "rollouts abort during an analysis run stops the rollout and puts the weight back",
  "a second push during a rollout supersedes it",
  "a promotion's delayed scale-down that falls due while a newer revision runs does nothing, and says so",
];

describe("IAM of every call the functions make on the embedded runtime", () => {
  const recorder = new IamCallRecorder();
  /** Each stack's functions with the calls they made: every scenario synthesizes its own. */
  const runs: Array<{ roles: FunctionRole[]; calls: IamCall[] }> = [];
  let dynamo: LocalDynamo;
  let n = 0;
  const started: LocalScenario[] = [];

  beforeAll(async () => {
    recorder.install();
    dynamo = await startDynamo("dynalite");
  });
  afterAll(async () => {
    recorder.uninstall();
    for (const s of started) await s.close().catch(() => undefined);
    await dynamo?.close();
  });

  /** Runs `run` on a fresh stack and keeps its template's roles with the calls made meanwhile. */
  async function recorded(options: ScenarioOptions, run: (s: LocalScenario) => Promise<void>) {
    const s = await startScenario({ dynamo, tableName: `rollouts-iam-${++n}`, ...options });
    started.push(s);
    recorder.take();
    await run(s);
    runs.push({ roles: functionRoles(s.stack.template), calls: recorder.take() });
  }

  for (const scenario of SCENARIOS.filter((s) => PICKED.includes(s.name))) {
    it(scenario.name, () => recorded(scenario.options, scenario.run));
  }

  it("a five-minute pause is a Scheduler schedule, and the rollout goes on when it fires", () =>
    recorded({ pause: "{duration: 5m}" }, async (s) => {
      await s.push("v1");
      expect((await s.drive(done("v1")))?.phase).toBe("Healthy");
      await s.push("v2");
      expect(await s.drive(at("v2", ["Paused"]))).toMatchObject({ waitingFor: "pause" });
      await s.idle(5 * 60_000);
      expect((await s.drive(done("v2")))?.phase).toBe("Healthy");
    }));

  it("a rollout with alarms and a hook after traffic, which passes", () => {
    let scenario: LocalScenario | undefined;
    const smoke = async (event: unknown) => {
      const { taskToken } = event as HookEvent;
      await scenario?.sfn.send(new SendTaskSuccessCommand({ taskToken, output: "{}" }));
      return { accepted: true };
    };
    return recorded(
      {
        annotations: {
          "rollouts.sfn/alarms": "demo-5xx",
          "rollouts.sfn/hook-after-traffic": localFunctionArn("smoke"),
        },
        hookFunctions: { smoke },
      },
      async (s) => {
        scenario = s;
        await s.stack.setAlarm("demo-5xx", "OK");
        await s.push("v1");
        expect((await s.drive(done("v1")))?.phase).toBe("Healthy");
        await s.push("v2");
        expect((await s.drive(done("v2")))?.phase).toBe("Healthy");
      },
    );
  });

  it("a SageMaker endpoint: a shadow, 50%, promoted by hand, the old side scaled down; the next one aborted", async () => {
    const clock = new ManualClock(Date.parse("2026-12-01T12:00:00Z"));
    const models: ModelServer[] = [];
    for (const m of MODEL_VERSIONS.slice(0, 3)) models.push(await startModel(m));
    const stack = await startEmbeddedStack({
      specFiles: [sageMakerSpec()],
      target: {
        type: "sagemaker",
        endpointName: "fraud",
        executionRoleArn: "arn:aws:iam::000000000000:role/sagemaker-execution",
        pollSeconds: 10,
      } as never,
      clock,
      dynamo,
      tableName: `rollouts-iam-${++n}`,
    });
    try {
      const sagemaker = stack.runtime.sagemaker;
      models.forEach((m, i) => {
        sagemaker.serve(modelImage(i + 1), m.url);
      });
      // The endpoint as CloudFormation creates it before any rollout: the first image, v1.
      sagemaker.createModel({ ModelName: "fraud-v1", PrimaryContainer: { Image: modelImage(1) } });
      sagemaker.createEndpointConfig({
        EndpointConfigName: "fraud-initial",
        ProductionVariants: [{ VariantName: "initial", ModelName: "fraud-v1", InitialVariantWeight: 1 }],
      });
      sagemaker.createEndpoint({ EndpointName: "fraud", EndpointConfigName: "fraud-initial" });
      await stack.runtime.advanceBy(60_000);
      recorder.take();
      const until = async (tag: string) => {
        for (let s = 0; s < 1800 && !finished(tag)(await stack.item()); s++)
          await stack.runtime.advanceBy(1000);
        return stack.item();
      };
      await stack.push("v1", modelDigest(1));
      const first = await until("v1");
      expect(first?.phase, first?.message).toBe("Healthy");
      const inService = async () => {
        for (let s = 0; s < 600 && sagemaker.describeEndpoint("fraud").status !== "InService"; s++) {
          await stack.runtime.advanceBy(1000);
        }
      };
      const cli = (...argv: string[]) =>
        runWithEnv(Object.fromEntries(CLI_ENV_KEYS.map((k) => [k, stack.env[k]])), ...argv);
      const paused = async (tag: string) => {
        for (let s = 0; s < 1800; s++) {
          const item = await stack.item();
          if (item?.currentRevision?.tag === tag && item.phase === "Paused") return item;
          await stack.runtime.advanceBy(1000);
        }
        throw new Error(`${tag} never paused`);
      };
      await inService();
      await stack.push("v2", modelDigest(2));
      expect((await paused("v2")).weight).toBe(50);
      expect((await cli("promote", stack.rollout)).code).toBe(0);
      const second = await until("v2");
      expect(second?.phase, second?.message).toBe("Healthy");
      // The old side's scale-down, then the leftovers deleted.
      for (let s = 0; s < 600 && sagemaker.describeEndpoint("fraud").variants.length > 1; s++) {
        await stack.runtime.advanceBy(1000);
      }
      await stack.runtime.advanceBy(300_000);
      await inService();
      await stack.push("v3", modelDigest(3));
      await paused("v3");
      expect((await cli("abort", stack.rollout)).code).toBe(0);
      const third = await until("v3");
      expect(third?.phase, third?.message).toBe("Degraded");
      await inService();
      await stack.runtime.advanceBy(300_000);
      runs.push({ roles: functionRoles(stack.template), calls: recorder.take() });
    } finally {
      await stack.close();
      for (const m of models) await m.close();
    }
  });

  it("every call was allowed by the calling function's role", async () => {
    expect(recorder.unmapped).toEqual([]);
    expect(runs.flatMap((r) => r.calls).length).toBeGreaterThan(0);
    const denied = (await Promise.all(runs.map((r) => denials(r.roles, r.calls)))).flat();
    const report = denied.map(
      (d) =>
        `${d.label} (${d.call.fn}): ${d.call.action} on ${d.call.resource} ${JSON.stringify(d.call.context)} is ${d.decision}; statements of that service: ${JSON.stringify(d.considered.map((s) => ({ id: s.id, Action: s.statement.Action, Resource: s.statement.Resource })))}`,
    );
    expect([...new Set(report)]).toEqual([]);
  });

  it("every granted action was needed by some call, or is a listed exception", async () => {
    // A grant counts as used when a stack that has it used it: stacks differ in what they grant.
    const uses = (await Promise.all(runs.map((r) => grantUse(r.roles, r.calls)))).flat();
    const key = (u: GrantUse) => `${u.label} ${u.statement} ${u.action}`;
    const used = new Set(uses.filter((u) => u.used).map(key));
    const unused = uses.filter((u) => !used.has(key(u)));
    const unexplained = unused.filter((u) => !IAM_UNUSED_EXCEPTIONS.some((e) => covers(e, u)));
    expect([...new Set(unexplained.map(describeUnused))]).toEqual([]);
  });
});

const describeUnused = (u: GrantUse) =>
  `${u.label}: ${u.action} on ${u.resources.join(", ")} (${u.statement})`;

const modelDigest = (n: number) => `sha256:${String(n).repeat(64)}`;
/** The image the trigger hands the target for a push of `modelDigest(n)` to the `demo` repository. */
const modelImage = (n: number) => `${registryHost(LOCAL_ACCOUNT, LOCAL_REGION)}/demo@${modelDigest(n)}`;

/** A model rollout with no analysis: a full shadow, the shadow removed, 50%, a pause for a person. */
function sageMakerSpec(): string {
  const file = join(mkdtempSync(join(tmpdir(), "sfn-rollouts-iam-")), "rollout.yaml");
  writeFileSync(
    file,
    `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: model
spec:
  replicas: 2
  template:
    spec:
      containers: [{name: model, image: model}]
  strategy:
    canary:
      steps:
        - setMirrorRoute: {name: shadow, percentage: 100}
        - setMirrorRoute: {name: shadow}
        - setWeight: 50
        - pause: {}
`,
  );
  return file;
}
