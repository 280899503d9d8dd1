import { type AddressInfo, createServer, type Server, type Socket } from "node:net";
import {
  DescribeExecutionCommand,
  ListExecutionsCommand,
  SFNClient,
  StopExecutionCommand,
} from "@aws-sdk/client-sfn";
import { run } from "@sfn-rollouts/test-support/cli";
import { type DynaliteHarness, startDynalite } from "@sfn-rollouts/test-support/dynalite";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { poll } from "../../cli/commands/operate-actions.ts";
import { main } from "../../cli/main.ts";
import { abortedStatusMessage } from "../../functions/abort/errors.ts";
import { ManualClock } from "../../functions/clock.ts";
import { DynamoRolloutStore } from "../../functions/store/dynamodb.ts";
import {
  appendEvent,
  type RolloutItem,
  type RolloutItemInput,
  RolloutItemSchema,
} from "../../functions/store/schema.ts";
import { update } from "../../functions/store/update.ts";
import { executionName } from "../../functions/trigger/decide.ts";
import { localFunctionArn } from "../../local/asl/intrinsics.ts";
import { type Runtime, startRuntime } from "../../local/runtime.ts";

/**
 * The operating commands end to end: the real SDK clients of the CLI, configured only through
 * `ROLLOUTS_TABLE` and `AWS_ENDPOINT_URL_*`, against an in-process dynalite table and the embedded
 * runtime's Step Functions façade running a tiny workflow that waits on a task token as every
 * rollout wait does (Pause → Promote, or → Abort on `RolloutAborted`).
 */

const TABLE_NAME = "rollouts-cli";
const REPO = "123456789012.dkr.ecr.us-east-1.amazonaws.com/checkout";
const digest = (c: string) => `sha256:${c.repeat(64)}`;
const REV1 = { revision: 1, image: `${REPO}@${digest("1")}`, digest: digest("1"), tag: "v1" };
const REV2 = { revision: 2, image: `${REPO}@${digest("2")}`, digest: digest("2"), tag: "v2" };

const definition = {
  StartAt: "Pause",
  States: {
    Pause: {
      Type: "Task",
      Resource: "arn:aws:states:::lambda:invoke.waitForTaskToken",
      Parameters: {
        FunctionName: "${AwaitFunctionArn}",
        Payload: {
          "taskToken.$": "$$.Task.Token",
          "rollout.$": "$.rollout",
          "executionArn.$": "$$.Execution.Id",
        },
      },
      ResultPath: "$.answer",
      Catch: [{ ErrorEquals: ["RolloutAborted"], ResultPath: "$.error", Next: "Abort" }],
      Next: "Promote",
    },
    Promote: {
      Type: "Task",
      Resource: "arn:aws:states:::lambda:invoke",
      Parameters: {
        FunctionName: "${PromoteFunctionArn}",
        Payload: { "rollout.$": "$.rollout", "answer.$": "$.answer" },
      },
      End: true,
    },
    Abort: {
      Type: "Task",
      Resource: "arn:aws:states:::lambda:invoke",
      Parameters: {
        FunctionName: "${AbortFunctionArn}",
        Payload: { "rollout.$": "$.rollout", "error.$": "$.error" },
      },
      Next: "Aborted",
    },
    Aborted: { Type: "Fail", Error: "RolloutAborted" },
  },
};

let dynalite: DynaliteHarness;
let runtime: Runtime;
let store: DynamoRolloutStore;
let sfn: SFNClient;
let stateMachineArn: string;
/** What the workflow's Promote and Abort states received, by rollout. */
const answers = new Map<string, unknown>();
const aborts = new Map<string, { Error?: string; Cause?: string }>();

type Event = {
  rollout: string;
  taskToken?: string;
  executionArn?: string;
  answer?: unknown;
  error?: unknown;
};

beforeAll(async () => {
  dynalite = await startDynalite(TABLE_NAME);
  store = new DynamoRolloutStore({ client: dynalite.client(), tableName: TABLE_NAME });
  runtime = await startRuntime({
    clock: new ManualClock(Date.parse("2026-01-01T00:00:00Z")),
    definitions: [
      {
        name: "checkout-rollout",
        definition,
        substitutions: {
          AwaitFunctionArn: localFunctionArn("await"),
          PromoteFunctionArn: localFunctionArn("promote"),
          AbortFunctionArn: localFunctionArn("abort"),
        },
      },
    ],
    functions: {
      // The pause handler: the token goes on the item, as `awaitStep` stores it.
      await: {
        handler: async (event) => {
          const { rollout, taskToken, executionArn } = event as Event;
          await update(store, rollout, "latest", (item) => ({
            ...item,
            phase: "Paused",
            message: "CanaryPauseStep: waiting for rollouts promote",
            executionArn: executionArn ?? null,
            currentTaskToken: taskToken ?? null,
            waitingFor: "pause",
            waitingSince: Date.now(),
            pause: { reason: "CanaryPauseStep", startedAt: Date.now(), until: null },
            events: appendEvent(item.events, {
              at: Date.now(),
              type: "RolloutPaused",
              message: "CanaryPauseStep: waiting for rollouts promote",
              step: 1,
            }),
          }));
          return null;
        },
      },
      promote: {
        handler: async (event) => {
          const { rollout, answer } = event as Event;
          answers.set(rollout, answer);
          await update(store, rollout, "latest", (item) => ({
            ...item,
            phase: "Healthy",
            message: "",
            stableRevision: item.currentRevision,
            stepIndex: item.stepCount,
            weight: 100,
            currentTaskToken: null,
            waitingFor: null,
            pause: null,
          }));
          return { phase: "Healthy" };
        },
      },
      abort: {
        handler: async (event) => {
          const { rollout, error } = event as Event;
          const caught = error as { Error?: string; Cause?: string };
          aborts.set(rollout, caught);
          await update(store, rollout, "latest", (item) => ({
            ...item,
            phase: "Degraded",
            message: abortedStatusMessage(item.currentRevision?.revision ?? null, item.abortReason ?? ""),
            weight: 0,
            currentTaskToken: null,
            waitingFor: null,
            pause: null,
          }));
          return { phase: "Degraded" };
        },
      },
    },
  });
  stateMachineArn = runtime.stateMachineArn("checkout-rollout");
  sfn = new SFNClient({
    endpoint: runtime.facadeUrl,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  // The CLI is configured the way a user configures it: environment only.
  for (const [key, value] of Object.entries(runtime.env)) vi.stubEnv(key, value);
  vi.stubEnv("AWS_ENDPOINT_URL_DYNAMODB", dynalite.endpoint);
  vi.stubEnv("ROLLOUTS_TABLE", TABLE_NAME);
});

afterAll(async () => {
  sfn?.destroy();
  await runtime?.close();
  await dynalite?.close();
  vi.unstubAllEnvs();
});

/** A rollout item as Begin leaves it: revision 2 on its way over revision 1. */
function seed(name: string, fields: Partial<RolloutItem> = {}): Promise<RolloutItem> {
  const now = Date.now();
  const item: RolloutItemInput = RolloutItemSchema.omit({ version: true, updatedAt: true }).parse({
    name,
    phase: "Progressing",
    stableRevision: REV1,
    currentRevision: REV2,
    stepIndex: 1,
    stepCount: 3,
    weight: 25,
    history: [{ ...REV1, at: now - 60_000 }],
    trigger: {
      repository: "checkout",
      digest: REV2.digest,
      tag: "v2",
      image: REV2.image,
      eventId: "push-1",
      eventTime: now,
      generation: 1,
      executionName: executionName(name, REV2.digest, 1),
      acceptedAt: now,
    },
    events: [{ at: now, type: "RolloutUpdated", message: "revision 2 (v2) started" }],
    createdAt: now,
    ...fields,
  });
  return store.save(item, null);
}

/** Seeds a rollout and starts its execution: it ends up Paused on a task token. */
async function startPaused(name: string): Promise<string> {
  await seed(name);
  const { executionArn } = runtime.startExecution({
    stateMachineArn,
    name: executionName(name, REV2.digest, 1),
    input: { rollout: name },
  });
  await runtime.settle();
  const item = await store.get(name);
  expect(item?.phase).toBe("Paused");
  expect(item?.currentTaskToken).toBeTruthy();
  return executionArn;
}

/** Runs the CLI in-process with an io that reports each write (to act between watch frames). */
function runWatching(argv: string[], onOut: (text: string, all: string[]) => void) {
  const out: string[] = [];
  let err = "";
  const code = main(argv, {
    out: (t) => {
      out.push(t);
      onOut(t, out);
    },
    err: (t) => {
      err += t;
    },
  });
  return { code, out, err: () => err };
}

describe("rollouts promote", () => {
  it("ends the pause through the façade: the execution continues to Promote", async () => {
    const executionArn = await startPaused("promote-once");
    const { code, out, err } = await run("promote", "promote-once");
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(out).toBe('rollout "promote-once": the pause ended, the rollout continues\n');
    await runtime.settle();
    expect(runtime.sfn.describeExecution(executionArn).status).toBe("SUCCEEDED");
    expect(answers.get("promote-once")).toEqual({ outcome: "continue" });
    expect(await run("status", "promote-once")).toMatchObject({ code: 0, out: "Healthy\n" });
  });

  it("a second promote finds nothing to promote and says so (exit 1)", async () => {
    await startPaused("promote-twice");
    expect((await run("promote", "promote-twice")).code).toBe(0);
    await runtime.settle();
    const again = await run("promote", "promote-twice");
    expect(again.code).toBe(1);
    expect(again.out).toBe("");
    expect(again.err).toBe('rollouts: rollout "promote-twice" is Healthy: nothing to promote\n');
  });

  it("a token whose wait is already over (the execution was stopped) is a clear refusal, not a crash", async () => {
    const executionArn = await startPaused("promote-stale");
    await sfn.send(new StopExecutionCommand({ executionArn, error: "Stopped", cause: "by hand" }));
    await runtime.settle();
    const { code, err } = await run("promote", "promote-stale");
    expect(code).toBe(1);
    expect(err).toBe(
      'rollouts: the pause of "promote-stale" was already over (TaskDoesNotExist): nothing was promoted\n',
    );
  });

  it("--full skips the remaining steps", async () => {
    await startPaused("promote-full");
    const { code, out } = await run("promote", "promote-full", "--full");
    expect(code).toBe(0);
    expect(out).toBe('rollout "promote-full" promoted: the remaining steps are skipped\n');
    await runtime.settle();
    expect(answers.get("promote-full")).toEqual({ outcome: "full" });
  });
});

describe("rollouts abort", () => {
  it("fails the wait with RolloutAborted: the execution goes to Abort and the rollout is Degraded", async () => {
    const executionArn = await startPaused("abort-me");
    const { code, out } = await run("abort", "abort-me", "--reason", "p99 latency doubled");
    expect(code).toBe(0);
    expect(out).toBe(
      "aborting abort-me: the execution was waiting on pause and has been told to abort (p99 latency doubled)\n",
    );
    await runtime.settle();
    expect(runtime.sfn.describeExecution(executionArn)).toMatchObject({
      status: "FAILED",
      error: "RolloutAborted",
    });
    expect(aborts.get("abort-me")).toMatchObject({ Error: "RolloutAborted", Cause: "p99 latency doubled" });
    const status = await run("status", "abort-me");
    expect(status.code).toBe(1);
    expect(status.out).toBe(
      "Degraded - RolloutAborted: Rollout aborted update to revision 2: p99 latency doubled\n",
    );

    const again = await run("abort", "abort-me");
    expect(again.code).toBe(1);
    expect(again.err).toBe(
      'rollouts: rollout "abort-me" is not running (phase Degraded: RolloutAborted: Rollout aborted update to revision 2: p99 latency doubled): nothing to abort\n',
    );
  });
});

describe("an AWS endpoint that accepts the connection and never answers", () => {
  let hung: Server;
  let hungUrl: string;
  const sockets = new Set<Socket>();

  beforeAll(async () => {
    hung = createServer((socket) => {
      sockets.add(socket); // read nothing, answer nothing, never close
    });
    await new Promise<void>((resolve) => hung.listen(0, "127.0.0.1", resolve));
    hungUrl = `http://127.0.0.1:${(hung.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => hung.close(() => resolve()));
  });

  /** Short figures through the environment, as a person on a slow link would set longer ones. */
  function shortTimeouts() {
    vi.stubEnv("ROLLOUTS_AWS_CONNECTION_TIMEOUT_MS", "200");
    vi.stubEnv("ROLLOUTS_AWS_REQUEST_TIMEOUT_MS", "200");
    vi.stubEnv("ROLLOUTS_AWS_MAX_ATTEMPTS", "2");
  }

  function restore() {
    vi.stubEnv("AWS_ENDPOINT_URL_SFN", runtime.env.AWS_ENDPOINT_URL_SFN as string);
    vi.stubEnv("AWS_ENDPOINT_URL_DYNAMODB", dynalite.endpoint);
    for (const key of [
      "ROLLOUTS_AWS_CONNECTION_TIMEOUT_MS",
      "ROLLOUTS_AWS_REQUEST_TIMEOUT_MS",
      "ROLLOUTS_AWS_MAX_ATTEMPTS",
    ]) {
      vi.stubEnv(key, "");
    }
  }

  it("abort ends with a one-line error and exit 5; run again, it finishes the abort it started", {
    timeout: 20_000,
  }, async () => {
    const executionArn = await startPaused("abort-hung");
    shortTimeouts();
    vi.stubEnv("AWS_ENDPOINT_URL_SFN", hungUrl);
    let first: Awaited<ReturnType<typeof run>>;
    try {
      first = await run("abort", "abort-hung", "--reason", "error rate");
    } finally {
      restore();
    }
    expect(first.code).toBe(5);
    expect(first.out).toBe("");
    expect(first.err.trimEnd().split("\n")).toHaveLength(1);
    expect(first.err).toMatch(
      /^rollouts: abort of abort-hung recorded \(error rate\), but the pause wait was not ended: SendTaskFailure failed: TimeoutError: .*; run `rollouts abort abort-hung` again to finish it\n$/,
    );
    const half = await store.get("abort-hung");
    expect(half).toMatchObject({ abortRequested: true, abortReason: "error rate", waitingFor: "pause" });
    expect(runtime.sfn.describeExecution(executionArn).status).toBe("RUNNING");

    const again = await run("abort", "abort-hung");
    expect(again.err).toBe("");
    expect(again.code).toBe(0);
    expect(again.out).toBe(
      "abort of abort-hung was already requested (error rate): finishing it, the execution was waiting on pause and has now been told to abort\n",
    );
    await runtime.settle();
    expect(runtime.sfn.describeExecution(executionArn)).toMatchObject({
      status: "FAILED",
      error: "RolloutAborted",
    });
    expect(aborts.get("abort-hung")).toMatchObject({ Error: "RolloutAborted", Cause: "error rate" });
  });

  it("a hung DynamoDB endpoint ends list, get and status with a one-line error and exit 5", {
    timeout: 20_000,
  }, async () => {
    await seed("read-hung");
    shortTimeouts();
    vi.stubEnv("AWS_ENDPOINT_URL_DYNAMODB", hungUrl);
    try {
      for (const argv of [["list"], ["get", "read-hung"], ["status", "read-hung"]]) {
        const { code, out, err } = await run(...argv);
        expect(code, argv.join(" ")).toBe(5);
        expect(out).toBe("");
        expect(err).toMatch(/^rollouts: .*TimeoutError: [^\n]*\n$/);
      }
    } finally {
      restore();
    }
  });

  it("an override that is not a whole number is refused, naming the variable (exit 2)", async () => {
    vi.stubEnv("ROLLOUTS_AWS_REQUEST_TIMEOUT_MS", "soon");
    try {
      const { code, err } = await run("list");
      expect(code).toBe(2);
      expect(err).toBe('rollouts: ROLLOUTS_AWS_REQUEST_TIMEOUT_MS must be a whole number > 0, got "soon"\n');
    } finally {
      restore();
    }
  });
});

describe("rollouts retry and undo", () => {
  it("retry starts a new execution of the aborted revision, with the next generation", async () => {
    await startPaused("retry-me");
    await run("abort", "retry-me");
    await runtime.settle();
    const { code, out } = await run("retry", "retry-me");
    const name = executionName("retry-me", REV2.digest, 2);
    expect(code).toBe(0);
    expect(out).toBe(`rollout "retry-me": retry started ${name}\n`);
    const listed = await sfn.send(new ListExecutionsCommand({ stateMachineArn }));
    const started = listed.executions?.find((e) => e.name === name);
    expect(started).toBeDefined();
    const described = await sfn.send(new DescribeExecutionCommand({ executionArn: started?.executionArn }));
    expect(JSON.parse(described.input ?? "{}")).toMatchObject({
      rollout: "retry-me",
      revision: { repository: "checkout", image: REV2.image, digest: REV2.digest, tag: "v2" },
      trigger: { generation: 2, executionName: name },
    });
    await runtime.settle();
    // The new execution runs the steps again: it is at its pause.
    expect((await run("status", "retry-me")).code).toBe(3);
    expect((await store.get("retry-me"))?.trigger?.generation).toBe(2);
  });

  it("retry of a rollout that is not Degraded is refused", async () => {
    await seed("retry-healthy", { phase: "Healthy", stableRevision: REV2 });
    const { code, err } = await run("retry", "retry-healthy");
    expect(code).toBe(1);
    expect(err).toBe(
      'rollouts: rollout "retry-healthy" is Healthy: only an aborted rollout can be retried\n',
    );
  });

  it("undo starts an execution of the previous stable revision", async () => {
    const done = runtime.startExecution({
      stateMachineArn,
      name: "undo-me-first",
      input: { rollout: "nobody" },
    });
    await seed("undo-me", {
      phase: "Healthy",
      stableRevision: REV2,
      currentRevision: REV2,
      stepIndex: 3,
      weight: 100,
      executionArn: done.executionArn,
      history: [
        { ...REV1, at: 1 },
        { ...REV2, at: 2 },
      ],
    });
    const { code, out } = await run("undo", "undo-me");
    const name = executionName("undo-me", REV1.digest, 2);
    expect(code).toBe(0);
    expect(out).toBe(`rollout "undo-me": undo to revision 1 started ${name}\n`);
    const described = await sfn.send(
      new DescribeExecutionCommand({ executionArn: done.executionArn.replace("undo-me-first", name) }),
    );
    expect(JSON.parse(described.input ?? "{}")).toMatchObject({
      rollout: "undo-me",
      revision: { image: REV1.image, digest: REV1.digest, tag: "v1" },
      trigger: { generation: 2 },
    });
    await runtime.settle();
    await sfn.send(new StopExecutionCommand({ executionArn: done.executionArn }));
  });

  it("retry and undo of a pass of a release in waves say that its coordinator starts it", async () => {
    const pass = {
      trigger: null,
      executionArn: `${stateMachineArn.replace(":stateMachine:", ":execution:")}:shop-eu-1`,
      startedBy: { eventId: "push-1", eventTime: Date.now(), executionName: "release-1" },
      history: [{ ...REV1, at: 1 }],
      stepLabels: ["eu/25%", "eu/100%"],
    };
    await seed("pass-aborted", { ...pass, phase: "Degraded" });
    await seed("pass-healthy", { ...pass, phase: "Healthy", stableRevision: REV2, currentRevision: REV2 });
    const retried = await run("retry", "pass-aborted");
    expect(retried.code).toBe(1);
    expect(retried.err).toBe(
      'rollouts: rollout "pass-aborted" is a pass of a release in waves: its coordinator starts it, not rollouts retry (release again from the home region: a new push of the image; rollouts waves pass-aborted shows the release)\n',
    );
    const undone = await run("undo", "pass-healthy");
    expect(undone.code).toBe(1);
    expect(undone.err).toMatch(
      /^rollouts: rollout "pass-healthy" is a pass of a release in waves: its coordinator starts it, not rollouts undo \(/,
    );
  });

  it("undo of a running rollout is refused", async () => {
    await startPaused("undo-running");
    const { code, err } = await run("undo", "undo-running");
    expect(code).toBe(1);
    expect(err).toBe('rollouts: rollout "undo-running" is Paused: abort it first, then undo\n');
  });
});

describe("rollouts status", () => {
  it.each([
    ["Healthy", 0],
    ["Degraded", 1],
    ["Paused", 3],
    ["Progressing", 4],
  ] as const)("exits with the phase: %s → %i", async (phase, exit) => {
    const name = `status-${phase.toLowerCase()}`;
    await seed(name, { phase, message: phase === "Healthy" ? "" : `why ${phase}` });
    const { code, out } = await run("status", name);
    expect(code).toBe(exit);
    expect(out).toBe(phase === "Healthy" ? "Healthy\n" : `${phase} - why ${phase}\n`);
  });

  it("--watch waits until the rollout is Healthy, printing each change", async () => {
    await startPaused("status-watch");
    let promoted: Promise<unknown> | undefined;
    const watching = runWatching(["status", "status-watch", "--watch", "--interval", "0.02"], (_t, all) => {
      if (all.length === 1) promoted = run("promote", "status-watch").then(() => runtime.settle());
    });
    expect(await watching.code).toBe(0);
    await promoted;
    expect(watching.out[0]).toBe("Paused - CanaryPauseStep: waiting for rollouts promote");
    expect(watching.out.at(-1)).toBe("Healthy");
    expect(new Set(watching.out).size).toBe(watching.out.length);
  });

  it("--timeout gives up on a rollout that stays Paused, with its phase as the exit code", async () => {
    await startPaused("status-timeout");
    const { code, out, err } = await run(
      "status",
      "status-timeout",
      "--timeout",
      "0.1s",
      "--interval",
      "0.02",
    );
    expect(code).toBe(3);
    expect(out).toBe("Paused - CanaryPauseStep: waiting for rollouts promote\n");
    expect(err).toBe(
      'rollouts: timed out waiting for rollout "status-timeout" to become Healthy or Degraded: it is Paused\n',
    );
  });

  it("an unknown rollout exits 2 (never 1, which means Degraded)", async () => {
    for (const command of ["status", "get", "promote", "abort", "retry", "undo"]) {
      const { code, err } = await run(command, "nope");
      expect(code).toBe(2);
      expect(err).toBe(
        `rollouts: rollout "nope" not found in table "${TABLE_NAME}" (rollouts list shows the rollouts it holds)\n`,
      );
    }
  });

  it("no table name, or a table that does not exist, exits 2 with what to set", async () => {
    vi.stubEnv("ROLLOUTS_TABLE", "");
    const missing = await run("status", "x");
    vi.stubEnv("ROLLOUTS_TABLE", TABLE_NAME);
    expect(missing.code).toBe(2);
    expect(missing.err).toBe(
      "rollouts: no rollouts table: pass --table NAME or set ROLLOUTS_TABLE (the construct's TableName output)\n",
    );
    const wrong = await run("list", "--table", "no-such-table");
    expect(wrong.code).toBe(2);
    expect(wrong.err).toMatch(/^rollouts: table "no-such-table" does not exist in this account and region/);
  });
});

describe("rollouts list and get", () => {
  it("list shows every rollout of the table; --json gives the items", async () => {
    await seed("list-a", { phase: "Healthy", stableRevision: REV2, message: "" });
    const { code, out } = await run("list");
    expect(code).toBe(0);
    const lines = out.split("\n");
    expect(lines[0]).toMatch(/^NAME\s+STATUS\s+STEP\s+WEIGHT\s+STABLE\s+CANARY\s+UPDATED\s+MESSAGE$/);
    expect(lines.find((l) => l.startsWith("list-a "))).toMatch(/^list-a\s+✔ Healthy\s+3\/3\s+25\s+2\s+-\s+/);
    const json = JSON.parse((await run("list", "--json")).out) as RolloutItem[];
    expect(json.map((i) => i.name)).toContain("list-a");
  });

  it("get prints the frame of a paused rollout; --json the item, runs and measurements", async () => {
    await startPaused("get-me");
    const { code, out } = await run("get", "get-me");
    expect(code).toBe(0);
    expect(out).toContain("Name:            get-me\nStatus:          ॥ Paused\n");
    expect(out).toContain("  ▶ ॥ 1  CanaryPauseStep: waiting for rollouts promote\n");
    expect(out).toContain(`${REPO}:v2 (canary, revision 2, sha256:222222222222)`);
    const json = JSON.parse((await run("get", "get-me", "--json")).out);
    expect(json.item).toMatchObject({ name: "get-me", phase: "Paused", waitingFor: "pause" });
    expect(json.runs).toEqual([]);
  });

  it("get --watch redraws on change and stops when the rollout is Healthy", async () => {
    await startPaused("watch-me");
    let promoted: Promise<unknown> | undefined;
    const watching = runWatching(["get", "watch-me", "--watch", "--interval", "0.02"], (_t, all) => {
      if (all.length === 1) promoted = run("promote", "watch-me").then(() => runtime.settle());
    });
    expect(await watching.code).toBe(0);
    await promoted;
    expect(watching.out[0]).toContain("Status:          ॥ Paused\n");
    expect(watching.out.at(-1)).toContain("Status:          ✔ Healthy\n");
    expect(watching.out.length).toBeGreaterThanOrEqual(2);
  });

  it("get --json of a rollout outside waves has waves null, and --watch --json one line with it", async () => {
    await seed("json-alone", { phase: "Healthy", stableRevision: REV2 });
    const once = await run("get", "json-alone", "--json");
    expect(once.code).toBe(0);
    const parsed = JSON.parse(once.out) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual(["item", "runs", "measurements", "gates", "waves"]);
    expect(parsed.waves).toBeNull();
    const watched = await run("get", "json-alone", "--watch", "--json");
    expect(watched.out.trim().split("\n")).toHaveLength(1);
    expect((JSON.parse(watched.out) as { waves: unknown }).waves).toBeNull();
  });

  it("get --watch of a settled rollout prints one frame and returns", async () => {
    await seed("watch-healthy", { phase: "Healthy", stableRevision: REV2 });
    const { code, out } = await run("get", "watch-healthy", "--watch");
    expect(code).toBe(0);
    expect(out.match(/^Name:/gm)).toHaveLength(1);
  });
});

describe("poll (the watch loop)", () => {
  it("draws only changed frames, and stops at maxFrames without waiting for real time", async () => {
    const values = ["a", "a", "b", "b", "c"];
    const shown: string[] = [];
    const waits: number[] = [];
    const { last, end } = await poll(
      async () => values.shift() ?? "z",
      (v) => v,
      (text) => shown.push(text),
      () => false,
      { intervalMs: 250, maxFrames: 4, sleep: async (ms) => void waits.push(ms) },
    );
    expect(end).toBe("frames");
    expect(last).toBe("b");
    expect(shown).toEqual(["a", "b"]);
    expect(waits).toEqual([250, 250, 250]);
  });

  it("stops on the signal (Ctrl-C) and at the deadline", async () => {
    const controller = new AbortController();
    let loads = 0;
    const interrupted = await poll(
      async () => ++loads,
      String,
      () => {},
      () => false,
      {
        intervalMs: 1000,
        signal: controller.signal,
        sleep: async () => {
          if (loads === 2) controller.abort();
        },
      },
    );
    expect(interrupted).toEqual({ last: 2, end: "interrupted" });

    let now = 0;
    const timedOut = await poll(
      async () => "Paused",
      String,
      () => {},
      () => false,
      {
        intervalMs: 1000,
        deadline: 2500,
        now: () => now,
        sleep: async (ms) => {
          now += ms;
        },
      },
    );
    expect(timedOut.end).toBe("timeout");
    expect(now).toBe(2500);
  });
});
