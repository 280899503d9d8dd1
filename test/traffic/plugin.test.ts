import {
  InvokeCommand,
  type InvokeCommandInput,
  LambdaClient,
  ResourceNotFoundException,
  ServiceException,
  TooManyRequestsException,
} from "@aws-sdk/client-lambda";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import { servePlugin, type TargetPlugin } from "../../functions/plugin/index.ts";
import {
  AliasChangedError,
  ListenerChangedError,
  TargetConfigurationError,
  TargetNotReadyError,
  TargetStateError,
  TrafficTargetError,
} from "../../functions/traffic/errors.ts";
import { createTrafficTarget } from "../../functions/traffic/index.ts";
import { PluginTraffic } from "../../functions/traffic/plugin.ts";
import { MAX_PLUGIN_STATE_BYTES, PLUGIN_PROTOCOL } from "../../functions/traffic/plugin-protocol.ts";
import type { TargetState } from "../../functions/traffic/port.ts";

const ARN = "arn:aws:lambda:eu-west-1:123456789012:function:mesh-router";
const QUALIFIED = `${ARN}:live`;
const SETTINGS = { type: "plugin", name: "mesh", functionArn: QUALIFIED, config: { mesh: "prod" } };
const lambda = mockClient(LambdaClient);

/** The requests the function received, decoded. */
let requests: Array<Record<string, unknown>> = [];
/** The calls' FunctionName and InvocationType. */
let invocations: Array<Pick<InvokeCommandInput, "FunctionName" | "InvocationType">> = [];

/** A memory target as a plugin: its state is `{weight, candidate?}`, every call recorded by the mock. */
function memoryPlugin(): TargetPlugin<{ weight: number; candidate?: string }> {
  return {
    prepare: () => ({ state: { weight: 0 }, firstRelease: false, stable: "v1 on the mesh" }),
    deployCandidate: (state, artifact) => ({
      ...state,
      candidate: "image" in artifact ? artifact.image : "?",
    }),
    checkReadiness: (state) => ({ ready: false, state, retryAfterSeconds: 7, message: "warming up" }),
    readWeights: (state) => ({
      canary: state.weight,
      stable: 100 - state.weight,
      expectedCanary: state.weight,
      drift: false,
      detail: "mesh",
    }),
    setWeight: (state, percent, options) => ({
      outcome: "applied",
      state: { ...state, weight: percent },
      weights: {
        canary: percent,
        stable: 100 - percent,
        expectedCanary: percent,
        drift: false,
        detail: options.overwriteDrift ? "overwritten" : "set",
      },
    }),
    setHeaderRoute: (state, route) => ({ state, applied: true, message: `route ${route.name}` }),
    removeHeaderRoute: (state, name) => ({ state, applied: false, message: `no route ${name}` }),
    setMirrorRoute: (state, route) => ({ state, message: `mirror ${route.percentage}%` }),
    promote: (_state, options) => ({ weight: options.scaleDownDelaySeconds }),
    abort: (state, options) => ({
      ready: true,
      state,
      message: `aborted ${options.abortScaleDownDelaySeconds}`,
    }),
    scaleDown: (state) => ({ ready: true, state, message: "nothing to scale" }),
  };
}

/** The function answers through `servePlugin`, as a plugin written with `sfn-rollouts/plugin` does. */
function serve(plugin: TargetPlugin<never> = memoryPlugin() as TargetPlugin<never>): void {
  const handler = servePlugin(() => plugin);
  lambda.on(InvokeCommand).callsFake(async (input: InvokeCommandInput) => {
    const request = JSON.parse(new TextDecoder().decode(input.Payload as Uint8Array));
    requests.push(request);
    invocations.push({ FunctionName: input.FunctionName, InvocationType: input.InvocationType });
    return { StatusCode: 200, Payload: encode(JSON.stringify(await handler(request))) };
  });
}

/** The function answers `payload` as it is, with `FunctionError` when given. */
function answer(payload: string, functionError?: string): void {
  lambda.on(InvokeCommand).resolves({
    StatusCode: 200,
    Payload: encode(payload),
    ...(functionError ? { FunctionError: functionError } : {}),
  });
}

function encode(text: string): never {
  return new TextEncoder().encode(text) as never;
}

const target = () => new PluginTraffic({ lambda: new LambdaClient({ region: "eu-west-1" }) }, SETTINGS);
const stored = (state: unknown): TargetState => ({ type: "plugin", name: "mesh", state });

beforeEach(() => {
  lambda.reset();
  requests = [];
  invocations = [];
});

describe("PluginTraffic: one invocation per call, the plugin's state wrapped", () => {
  it("prepares with an empty args object and wraps the state it returns", async () => {
    serve();
    expect(await target().prepare()).toEqual({
      state: { type: "plugin", name: "mesh", state: { weight: 0 } },
      firstRelease: false,
      stable: "v1 on the mesh",
    });
    expect(requests).toEqual([
      { protocol: PLUGIN_PROTOCOL, method: "prepare", name: "mesh", config: { mesh: "prod" }, args: {} },
    ]);
    expect(invocations).toEqual([{ FunctionName: QUALIFIED, InvocationType: "RequestResponse" }]);
  });

  it("hands the pushed artifact to deployCandidate: artifactFor is the pushed image", async () => {
    serve();
    const t = target();
    const pushed = { image: "1.dkr.ecr/app@sha256:abc", digest: "sha256:abc", tag: "v2" };
    const artifact = t.artifactFor(pushed);
    expect(artifact).toEqual({ image: "1.dkr.ecr/app@sha256:abc", version: "v2" });
    expect(await t.deployCandidate(stored({ weight: 0 }), artifact)).toEqual(
      stored({ weight: 0, candidate: "1.dkr.ecr/app@sha256:abc" }),
    );
    expect(requests[0]?.args).toEqual({ state: { weight: 0 }, artifact });
  });

  it("polls readiness and passes the plugin's retryAfterSeconds on", async () => {
    serve();
    expect(await target().checkReadiness(stored({ weight: 0 }))).toEqual({
      ready: false,
      state: stored({ weight: 0 }),
      retryAfterSeconds: 7,
      message: "warming up",
    });
    expect(requests[0]).toMatchObject({ method: "checkReadiness", args: { state: { weight: 0 } } });
  });

  it("reads and sets weights, passing overwriteDrift", async () => {
    serve();
    const t = target();
    expect((await t.readWeights(stored({ weight: 30 }))).canary).toBe(30);
    const change = await t.setWeight(stored({ weight: 0 }), 25, { overwriteDrift: true });
    expect(change).toEqual({
      outcome: "applied",
      state: stored({ weight: 25 }),
      weights: { canary: 25, stable: 75, expectedCanary: 25, drift: false, detail: "overwritten" },
    });
    expect(requests[1]?.args).toEqual({
      state: { weight: 0 },
      percent: 25,
      options: { overwriteDrift: true },
    });
  });

  it("sets and removes header routes and mirrors", async () => {
    serve();
    const t = target();
    const route = { name: "qa", match: [{ headerName: "X-Team", headerValue: { exact: "qa" } }] };
    expect(await t.setHeaderRoute(stored({ weight: 0 }), route)).toEqual({
      state: stored({ weight: 0 }),
      applied: true,
      message: "route qa",
    });
    expect((await t.removeHeaderRoute(stored({ weight: 0 }), "qa")).applied).toBe(false);
    expect((await t.setMirrorRoute(stored({ weight: 0 }), { name: "s", percentage: 10 })).message).toBe(
      "mirror 10%",
    );
    expect(requests.map((r) => r.args)).toEqual([
      { state: { weight: 0 }, route },
      { state: { weight: 0 }, name: "qa" },
      { state: { weight: 0 }, route: { name: "s", percentage: 10 } },
    ]);
  });

  it("promotes, aborts and scales down with the rollout's delays", async () => {
    serve();
    const t = target();
    expect(await t.promote(stored({ weight: 50 }), { scaleDownDelaySeconds: 30 })).toEqual(
      stored({ weight: 30 }),
    );
    expect((await t.abort(stored({ weight: 50 }), { abortScaleDownDelaySeconds: 5 })).message).toBe(
      "aborted 5",
    );
    expect(await t.scaleDown(stored({ weight: 0 }))).toEqual({
      ready: true,
      state: stored({ weight: 0 }),
      message: "nothing to scale",
    });
    expect(requests.map((r) => [r.method, r.args])).toEqual([
      ["promote", { state: { weight: 50 }, options: { scaleDownDelaySeconds: 30 } }],
      ["abort", { state: { weight: 50 }, options: { abortScaleDownDelaySeconds: 5 } }],
      ["scaleDown", { state: { weight: 0 } }],
    ]);
  });

  it("is what createTrafficTarget builds for a plugin, with the composition root's Lambda client", async () => {
    serve();
    const built = createTrafficTarget(
      SETTINGS,
      { lambda: new LambdaClient({ region: "eu-west-1" }) },
      new ManualClock(0),
    );
    expect(built).toBeInstanceOf(PluginTraffic);
    expect(built.type).toBe("plugin");
    expect(() => createTrafficTarget(SETTINGS, {}, new ManualClock(0))).toThrow(
      new TargetConfigurationError("a target plugin needs the lambda client"),
    );
  });
});

describe("PluginTraffic: what goes wrong, as the built-in targets' errors", () => {
  it.each([
    ["TargetNotReadyError", TargetNotReadyError],
    ["ListenerChangedError", ListenerChangedError],
    ["AliasChangedError", AliasChangedError],
    ["TargetConfigurationError", TargetConfigurationError],
    ["TargetStateError", TargetStateError],
    ["TrafficTargetError", TrafficTargetError],
  ])(
    "rethrows an error reply named %s as that class, the plugin and the method first",
    async (name, type) => {
      answer(JSON.stringify({ error: { name, message: "the mesh said no" } }));
      const error = await target()
        .setWeight(stored({ weight: 0 }), 10)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(type);
      expect((error as Error).name).toBe(name);
      expect((error as Error).message).toBe('plugin "mesh" setWeight: the mesh said no');
    },
  );

  it("throws any other name as a TrafficTargetError that keeps it: a plugin cannot abort or supersede", async () => {
    for (const name of ["RolloutAborted", "ExecutionSuperseded", "TypeError", "constructor", "__proto__"]) {
      answer(JSON.stringify({ error: { name, message: "boom" } }));
      const error = await target()
        .prepare()
        .catch((e: unknown) => e);
      expect(error, name).toBeInstanceOf(TrafficTargetError);
      expect((error as Error).name, name).toBe("TrafficTargetError");
      expect((error as Error).message, name).toBe(`plugin "mesh" prepare: ${name}: boom`);
    }
  });

  it("throws TargetNotReadyError when the function crashed (FunctionError), with Lambda's error", async () => {
    answer(
      JSON.stringify({ errorType: "Runtime.ExitError", errorMessage: "exited with status 137" }),
      "Unhandled",
    );
    const error = await target()
      .checkReadiness(stored({}))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TargetNotReadyError);
    expect((error as Error).message).toBe(
      `plugin "mesh" checkReadiness: the function ${QUALIFIED} failed: Runtime.ExitError: exited with status 137`,
    );
  });

  it("throws TargetNotReadyError for a payload that is not JSON, quoting it", async () => {
    answer("<html>502 Bad Gateway</html>");
    await expect(target().prepare()).rejects.toThrow(
      new TargetNotReadyError(
        `plugin "mesh" prepare: the function ${QUALIFIED} answered with a payload that is not JSON: <html>502 Bad Gateway</html>`,
      ),
    );
  });

  it("throws TargetNotReadyError for a throttle or a service fault, TargetConfigurationError for a missing function", async () => {
    const cases = [
      [new TooManyRequestsException({ message: "Rate exceeded", $metadata: {} }), TargetNotReadyError],
      [new ServiceException({ message: "internal", $metadata: {} }), TargetNotReadyError],
      [Object.assign(new Error("socket hang up"), { name: "TimeoutError" }), TargetNotReadyError],
      [
        new ResourceNotFoundException({ message: "Function not found", $metadata: {} }),
        TargetConfigurationError,
      ],
    ] as const;
    for (const [thrown, type] of cases) {
      lambda.on(InvokeCommand).rejects(thrown);
      const error = await target()
        .readWeights(stored({}))
        .catch((e: unknown) => e);
      expect(error, thrown.name).toBeInstanceOf(type);
      expect((error as Error).message).toBe(
        `plugin "mesh" readWeights: could not invoke ${QUALIFIED}: ${thrown.name}: ${thrown.message}`,
      );
      expect((error as Error).cause).toBe(thrown);
    }
  });

  it("refuses a reply whose result is not the method's, naming the plugin, the method and the field", async () => {
    answer(
      JSON.stringify({
        result: {
          outcome: "applied",
          state: {},
          weights: { canary: 120, stable: 0, expectedCanary: 0, drift: false, detail: "" },
        },
      }),
    );
    const error = await target()
      .setWeight(stored({}), 10)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TargetConfigurationError);
    expect((error as Error).message).toBe(
      'invalid reply of plugin "mesh" setWeight: result.weights.canary: Too big: expected number to be <=100',
    );
  });

  it("refuses a reply with neither result nor error, and a result without the state", async () => {
    answer("null");
    await expect(target().prepare()).rejects.toThrow(
      /^invalid reply of plugin "mesh" prepare: \(root\): Invalid input: expected object, received null$/,
    );
    answer(JSON.stringify({ result: { ready: true, message: "ok" } }));
    await expect(target().scaleDown(stored({}))).rejects.toThrow(
      /^invalid reply of plugin "mesh" scaleDown: result.state: /,
    );
    answer(JSON.stringify({ answer: 42 }));
    await expect(target().promote(stored({}), { scaleDownDelaySeconds: 0 })).rejects.toBeInstanceOf(
      TargetConfigurationError,
    );
  });

  it("refuses a state larger than a rollout item can hold", async () => {
    answer(JSON.stringify({ result: { state: "x".repeat(MAX_PLUGIN_STATE_BYTES) } }));
    await expect(target().deployCandidate(stored({}), { image: "i" })).rejects.toThrow(
      `result.state: a plugin's state is at most ${MAX_PLUGIN_STATE_BYTES} bytes of JSON, got ${MAX_PLUGIN_STATE_BYTES + 2}`,
    );
  });

  it("refuses a state another plugin or another target wrote, before invoking anything", async () => {
    serve();
    const other = await target()
      .readWeights({ type: "plugin", name: "cdn", state: {} })
      .catch((e: unknown) => e);
    expect(other).toBeInstanceOf(TargetStateError);
    expect((other as Error).message).toBe(
      'the stored state is plugin "cdn"\'s, and this target is plugin "mesh": a state is only handed back to the plugin that wrote it',
    );
    await expect(target().readWeights({ type: "lambda-alias", alias: "live" })).rejects.toThrow(
      /^invalid plugin "mesh" router state: type: /,
    );
    expect(requests).toEqual([]);
  });
});

describe("the plugin target's settings", () => {
  const problems = (settings: Record<string, unknown>) => {
    try {
      new PluginTraffic({ lambda: new LambdaClient({}) }, { ...SETTINGS, ...settings });
      return "";
    } catch (error) {
      expect(error).toBeInstanceOf(TargetConfigurationError);
      return (error as Error).message;
    }
  };

  it("takes an unqualified ARN, a version, an alias and $LATEST", () => {
    for (const functionArn of [
      ARN,
      `${ARN}:7`,
      `${ARN}:live`,
      `${ARN}:$LATEST`,
      ARN.replace(":aws:", ":aws-cn:"),
    ]) {
      expect(problems({ functionArn }), functionArn).toBe("");
    }
  });

  it("names functionArn when it is not a Lambda function's ARN", () => {
    for (const functionArn of [
      "mesh-router",
      `${ARN}:live:extra`,
      ARN.replace("function", "layer"),
      `${ARN}:`,
    ]) {
      expect(problems({ functionArn }), functionArn).toBe(
        "invalid plugin settings: functionArn: a Lambda function ARN (arn:aws:lambda:REGION:ACCOUNT:function:NAME, optionally :VERSION or :ALIAS)",
      );
    }
  });

  it("names the field of a bad name, a config that is not JSON, and a config key Step Functions would evaluate", () => {
    expect(problems({ name: "" })).toMatch(/^invalid plugin settings: name: a plugin name: /);
    expect(problems({ config: [1] })).toMatch(/^invalid plugin settings: config: /);
    expect(problems({ config: { routes: [{ "weight.$": "$.x" }] } })).toBe(
      'invalid plugin settings: config.routes[0].weight.$: a key ending in ".$" is a path that Step Functions evaluates in the Tasks\' Parameters',
    );
    expect(problems({ extra: 1 })).toBe('invalid plugin settings: (root): unknown field "extra"');
  });

  it("hands the plugin an empty config when none is given", async () => {
    serve();
    const { config: _config, ...bare } = SETTINGS;
    await new PluginTraffic({ lambda: new LambdaClient({ region: "eu-west-1" }) }, bare).prepare();
    expect(requests[0]?.config).toEqual({});
  });
});
