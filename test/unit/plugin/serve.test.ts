import { describe, expect, it } from "vitest";
import {
  PLUGIN_METHODS,
  PLUGIN_PROTOCOL,
  type PluginJson,
  servePlugin,
  TargetNotReadyError,
  type TargetPlugin,
} from "../../../functions/plugin/index.ts";

/** A plugin whose methods answer what `calls` records; `setMirrorRoute` left out. */
function recording(calls: unknown[][]): TargetPlugin<PluginJson> {
  const change = (state: PluginJson) => ({ state, applied: true, message: "ok" });
  const ready = (state: PluginJson) => ({ ready: true as const, state, message: "ok" });
  return {
    prepare: () => ({ state: { n: 0 }, firstRelease: true, stable: "nothing" }),
    deployCandidate: (state, artifact) => {
      calls.push(["deployCandidate", state, artifact]);
      return { deployed: true };
    },
    checkReadiness: ready,
    readWeights: () => ({ canary: 0, stable: 100, expectedCanary: 0, drift: false, detail: "" }),
    setWeight: (state, percent, options) => {
      calls.push(["setWeight", state, percent, options]);
      return {
        outcome: "applied",
        state,
        weights: {
          canary: percent,
          stable: 100 - percent,
          expectedCanary: percent,
          drift: false,
          detail: "",
        },
      };
    },
    setHeaderRoute: change,
    removeHeaderRoute: change,
    promote: async (state, options) => {
      calls.push(["promote", state, options]);
      return { promoted: true };
    },
    abort: ready,
    scaleDown: ready,
  };
}

const request = (
  method: string,
  args: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
) => ({
  protocol: PLUGIN_PROTOCOL,
  method,
  name: "mesh",
  config: { mesh: "prod" },
  args,
  ...extra,
});

describe("servePlugin", () => {
  it("builds the plugin from the request's config and name, and answers {result}", async () => {
    const built: unknown[] = [];
    const handler = servePlugin((config, name) => {
      built.push([config, name]);
      return recording([]);
    });
    expect(await handler(request("prepare"))).toEqual({
      result: { state: { n: 0 }, firstRelease: true, stable: "nothing" },
    });
    expect(built).toEqual([[{ mesh: "prod" }, "mesh"]]);
  });

  it("answers {state} for deployCandidate and promote, whose port methods return the state itself", async () => {
    const calls: unknown[][] = [];
    const handler = servePlugin(() => recording(calls));
    const artifact = { image: "repo@sha256:1", version: "v2" };
    expect(await handler(request("deployCandidate", { state: null, artifact }))).toEqual({
      result: { state: { deployed: true } },
    });
    expect(await handler(request("promote", { state: [1], options: { scaleDownDelaySeconds: 3 } }))).toEqual({
      result: { state: { promoted: true } },
    });
    expect(calls).toEqual([
      ["deployCandidate", null, artifact],
      ["promote", [1], { scaleDownDelaySeconds: 3 }],
    ]);
  });

  it("gives setWeight its options, empty when the request has none", async () => {
    const calls: unknown[][] = [];
    const handler = servePlugin(() => recording(calls));
    await handler(request("setWeight", { state: "s", percent: 40 }));
    await handler(request("setWeight", { state: "s", percent: 0, options: { overwriteDrift: true } }));
    expect(calls).toEqual([
      ["setWeight", "s", 40, {}],
      ["setWeight", "s", 0, { overwriteDrift: true }],
    ]);
  });

  it("refuses a protocol it does not speak, naming it, without building the plugin", async () => {
    let built = 0;
    const handler = servePlugin(() => {
      built++;
      return recording([]);
    });
    expect(await handler(request("prepare", {}, { protocol: "sfn-rollouts.target/v2" }))).toEqual({
      error: {
        name: "TargetConfigurationError",
        message: `unknown protocol "sfn-rollouts.target/v2": this plugin speaks ${PLUGIN_PROTOCOL}`,
      },
    });
    expect(await handler(null)).toEqual({
      error: {
        name: "TargetConfigurationError",
        message: `unknown protocol (none): this plugin speaks ${PLUGIN_PROTOCOL}`,
      },
    });
    expect(built).toBe(0);
  });

  it("refuses an unknown method, listing the methods a plugin answers", async () => {
    const handler = servePlugin(() => recording([]));
    expect(await handler(request("artifactFor"))).toEqual({
      error: {
        name: "TargetConfigurationError",
        message: `unknown method "artifactFor": a target plugin answers ${PLUGIN_METHODS.join(", ")}`,
      },
    });
  });

  it("refuses arguments that are not the method's, naming the field", async () => {
    const handler = servePlugin(() => recording([]));
    expect(await handler(request("setWeight", { state: {}, percent: 101 }))).toEqual({
      error: {
        name: "TargetConfigurationError",
        message: "invalid arguments of setWeight: args.percent: Too big: expected number to be <=100",
      },
    });
    const noState = await handler(request("scaleDown", {}));
    expect(noState).toMatchObject({ error: { name: "TargetConfigurationError" } });
    expect(JSON.stringify(noState)).toContain("args.state: ");
    expect(await handler(request("prepare", {}, { config: "prod" }))).toMatchObject({
      error: {
        name: "TargetConfigurationError",
        message: expect.stringMatching(/^invalid prepare request: config: /),
      },
    });
  });

  it("answers a plugin without setMirrorRoute with a TargetConfigurationError", async () => {
    const handler = servePlugin(() => recording([]));
    expect(
      await handler(request("setMirrorRoute", { state: {}, route: { name: "s", percentage: 5 } })),
    ).toEqual({
      error: {
        name: "TargetConfigurationError",
        message: "this plugin cannot mirror requests (it has no setMirrorRoute)",
      },
    });
  });

  it("encodes what the plugin throws by its name and message, whatever was thrown", async () => {
    const failing = (thrown: unknown) =>
      servePlugin(() => ({
        ...recording([]),
        checkReadiness: () => {
          throw thrown;
        },
      }));
    const readiness = request("checkReadiness", { state: {} });
    expect(await failing(new TargetNotReadyError("the mesh is down"))(readiness)).toEqual({
      error: { name: "TargetNotReadyError", message: "the mesh is down" },
    });
    expect(await failing(new TypeError("x is undefined"))(readiness)).toEqual({
      error: { name: "TypeError", message: "x is undefined" },
    });
    expect(await failing("just a string")(readiness)).toEqual({
      error: { name: "Error", message: "just a string" },
    });
  });

  it("encodes a config the factory refuses as the factory's error", async () => {
    const handler = servePlugin(() => {
      throw new TargetNotReadyError("no mesh configured");
    });
    expect(await handler(request("prepare"))).toEqual({
      error: { name: "TargetNotReadyError", message: "no mesh configured" },
    });
  });
});
