import {
  GetAliasCommand,
  GetFunctionConfigurationCommand,
  LambdaClient,
  PublishVersionCommand,
  UpdateAliasCommand,
  type UpdateAliasRequest,
  UpdateFunctionCodeCommand,
} from "@aws-sdk/client-lambda";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import { AliasChangedError, TargetNotReadyError, TargetStateError } from "../../functions/traffic/errors.ts";
import {
  type LambdaAliasState,
  LambdaAliasTraffic,
  weightedAlias,
} from "../../functions/traffic/lambda-alias.ts";
import type { TargetState } from "../../functions/traffic/port.ts";

const IMAGE = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/checkout@sha256:5be1c9";
const lambda = mockClient(LambdaClient);

/** A tiny in-memory Lambda function with an alias, so call sequences behave as on AWS. */
interface World {
  alias: {
    FunctionVersion: string;
    RoutingConfig?: { AdditionalVersionWeights?: Record<string, number> };
    RevisionId: string;
  };
  latest: {
    CodeSha256: string;
    LastUpdateStatus: "Successful" | "InProgress" | "Failed";
    LastUpdateStatusReason?: string;
    LastUpdateStatusReasonCode?: string;
    RevisionId: string;
  };
  versions: Record<string, { CodeSha256: string; State: string }>;
  revisions: number;
}
let world: World;
const rev = () => `rev-${++world.revisions}`;

let clock: ManualClock;

function router(extra: Record<string, unknown> = {}): LambdaAliasTraffic {
  return new LambdaAliasTraffic(
    { lambda: new LambdaClient({ region: "eu-west-1" }) },
    { type: "lambda-alias", functionName: "checkout", alias: "live", progressDeadlineSeconds: 300, ...extra },
    clock,
  );
}
const asLambda = (s: TargetState): LambdaAliasState => s as LambdaAliasState;

beforeEach(() => {
  lambda.reset();
  clock = new ManualClock(Date.UTC(2026, 0, 1));
  world = {
    alias: { FunctionVersion: "7", RevisionId: "rev-alias-0" },
    latest: { CodeSha256: "old-sha", LastUpdateStatus: "Successful", RevisionId: "rev-0" },
    versions: { "7": { CodeSha256: "old-sha", State: "Active" } },
    revisions: 0,
  };
  lambda.on(GetAliasCommand).callsFake(() => structuredClone({ ...world.alias, Name: "live" }));
  lambda.on(UpdateAliasCommand).callsFake((input: UpdateAliasRequest) => {
    if (input.RevisionId !== world.alias.RevisionId) {
      throw Object.assign(new Error("The Revision Id provided does not match the latest Revision Id."), {
        name: "PreconditionFailedException",
      });
    }
    world.alias = {
      FunctionVersion: input.FunctionVersion ?? world.alias.FunctionVersion,
      RoutingConfig: input.RoutingConfig ?? world.alias.RoutingConfig,
      RevisionId: rev(),
    };
    return structuredClone(world.alias);
  });
  lambda.on(UpdateFunctionCodeCommand).callsFake((input: { ImageUri?: string; S3Key?: string }) => {
    world.latest = {
      CodeSha256: `sha-of-${input.ImageUri ?? input.S3Key}`,
      LastUpdateStatus: "InProgress",
      RevisionId: rev(),
    };
    return { ...world.latest, Version: "$LATEST" };
  });
  lambda
    .on(GetFunctionConfigurationCommand)
    .callsFake((input: { Qualifier?: string }) =>
      input.Qualifier
        ? { Version: input.Qualifier, ...world.versions[input.Qualifier] }
        : { Version: "$LATEST", ...world.latest },
    );
  lambda.on(PublishVersionCommand).callsFake((input: { CodeSha256?: string; RevisionId?: string }) => {
    if (input.RevisionId !== world.latest.RevisionId) {
      throw Object.assign(new Error("revision changed"), { name: "PreconditionFailedException" });
    }
    const existing = Object.entries(world.versions).find(([, v]) => v.CodeSha256 === input.CodeSha256);
    if (existing) return { Version: existing[0], State: existing[1].State };
    const version = String(Math.max(...Object.keys(world.versions).map(Number)) + 1);
    world.versions[version] = { CodeSha256: world.latest.CodeSha256, State: "Active" };
    return { Version: version, State: "Active", CodeSha256: world.latest.CodeSha256 };
  });
});

async function ready(r = router()): Promise<TargetState> {
  const { state } = await r.prepare();
  const s = await r.deployCandidate(state, { image: IMAGE });
  world.latest.LastUpdateStatus = "Successful";
  const res = await r.checkReadiness(s);
  expect(res.ready).toBe(true);
  return res.state;
}

function lastAliasUpdate(): UpdateAliasRequest | undefined {
  return lambda.commandCalls(UpdateAliasCommand).at(-1)?.args[0].input;
}

describe("weightedAlias", () => {
  it("maps a percent onto one additional version weight, and 0/100 onto no routing config", () => {
    expect(weightedAlias("7", "8", 0)).toEqual({
      FunctionVersion: "7",
      RoutingConfig: { AdditionalVersionWeights: {} },
    });
    expect(weightedAlias("7", "8", 1)).toEqual({
      FunctionVersion: "7",
      RoutingConfig: { AdditionalVersionWeights: { "8": 0.01 } },
    });
    expect(weightedAlias("7", "8", 100)).toEqual({
      FunctionVersion: "8",
      RoutingConfig: { AdditionalVersionWeights: {} },
    });
  });
});

describe("LambdaAliasTraffic", () => {
  it("prepare reads the alias's version and refuses an alias that already routes to another version", async () => {
    const { state, firstRelease } = await router().prepare();
    expect(asLambda(state)).toMatchObject({ stableVersion: "7", phase: "prepared" });
    expect(firstRelease).toBe(false);
    world.alias.RoutingConfig = { AdditionalVersionWeights: { "6": 0.1 } };
    await expect(router().prepare()).rejects.toThrow(/already routes 10% to version 6/);
  });

  it("deploys: UpdateFunctionCode with the digest, waits for LastUpdateStatus, then publishes pinned to the code hash", async () => {
    const r = router();
    const { state } = await r.prepare();
    let s = await r.deployCandidate(state, { image: IMAGE });
    expect(lambda.commandCalls(UpdateFunctionCodeCommand)[0]?.args[0].input).toEqual({
      FunctionName: "checkout",
      ImageUri: IMAGE,
    });
    expect(lambda.commandCalls(UpdateAliasCommand)).toHaveLength(0);

    const waiting = await r.checkReadiness(s);
    expect(waiting.ready).toBe(false);
    expect(waiting.message).toContain("InProgress");
    expect(lambda.commandCalls(PublishVersionCommand)).toHaveLength(0);

    world.latest.LastUpdateStatus = "Successful";
    const done = await r.checkReadiness(waiting.state);
    expect(done.ready).toBe(true);
    s = done.state;
    expect(lambda.commandCalls(PublishVersionCommand)[0]?.args[0].input).toEqual({
      FunctionName: "checkout",
      CodeSha256: `sha-of-${IMAGE}`,
      RevisionId: world.latest.RevisionId,
    });
    expect(asLambda(s)).toMatchObject({ phase: "ready", candidateVersion: "8", stableVersion: "7" });
    expect(done.message).toContain("checkout:8");
    expect(lambda.commandCalls(UpdateAliasCommand)).toHaveLength(0);
  });

  it("deploys a zip from S3 for a zip function", async () => {
    const r = router({ packageType: "Zip", s3Bucket: "artifacts" });
    const { state } = await r.prepare();
    await r.deployCandidate(state, { s3Key: "checkout/2026-01-01.zip", s3ObjectVersion: "v3" });
    expect(lambda.commandCalls(UpdateFunctionCodeCommand)[0]?.args[0].input).toEqual({
      FunctionName: "checkout",
      S3Bucket: "artifacts",
      S3Key: "checkout/2026-01-01.zip",
      S3ObjectVersion: "v3",
    });
    await expect(r.deployCandidate(state, { image: IMAGE })).rejects.toThrow(/zip function/);
  });

  it("fails clearly when the code update fails, without publishing", async () => {
    const r = router();
    const { state } = await r.prepare();
    const s = await r.deployCandidate(state, { image: IMAGE });
    world.latest.LastUpdateStatus = "Failed";
    world.latest.LastUpdateStatusReasonCode = "ImageAccessDenied";
    world.latest.LastUpdateStatusReason = "Lambda does not have permission to access the ECR image.";
    const err = await r.checkReadiness(s).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TargetNotReadyError);
    expect((err as Error).message).toBe(
      "the code update of checkout failed: ImageAccessDenied: Lambda does not have permission to access the ECR image.",
    );
    expect(lambda.commandCalls(PublishVersionCommand)).toHaveLength(0);
  });

  it("wraps a refused UpdateFunctionCode into TargetNotReadyError but lets a conflict through for a retry", async () => {
    const r = router();
    const { state } = await r.prepare();
    lambda
      .on(UpdateFunctionCodeCommand)
      .rejects(
        Object.assign(new Error("Source image does not exist"), { name: "InvalidParameterValueException" }),
      );
    await expect(r.deployCandidate(state, { image: IMAGE })).rejects.toThrow(
      /UpdateFunctionCode of checkout was refused: InvalidParameterValueException/,
    );
    lambda
      .on(UpdateFunctionCodeCommand)
      .rejects(Object.assign(new Error("An update is in progress"), { name: "ResourceConflictException" }));
    const err = await r.deployCandidate(state, { image: IMAGE }).catch((e: unknown) => e);
    expect((err as Error).name).toBe("ResourceConflictException");
  });

  it("fails after the progress deadline when the update never finishes", async () => {
    const r = router();
    const { state } = await r.prepare();
    const s = await r.deployCandidate(state, { image: IMAGE });
    clock.advance(299_000);
    expect((await r.checkReadiness(s)).ready).toBe(false);
    clock.advance(1_000);
    await expect(r.checkReadiness(s)).rejects.toThrow(/checkout was not ready before its progress deadline/);
  });

  it("refuses to publish code that someone else replaced during the update", async () => {
    const r = router();
    const { state } = await r.prepare();
    const s = await r.deployCandidate(state, { image: IMAGE });
    world.latest = { CodeSha256: "someone-elses", LastUpdateStatus: "Successful", RevisionId: "rev-x" };
    await expect(r.checkReadiness(s)).rejects.toBeInstanceOf(AliasChangedError);
    expect(lambda.commandCalls(PublishVersionCommand)).toHaveLength(0);
  });

  it("sets every weight from 1% to 99% as one additional version weight, and 100% as the alias's version", async () => {
    const r = router();
    let s = await ready(r);
    for (let p = 1; p <= 99; p++) {
      const change = await r.setWeight(s, p);
      expect(change.outcome).toBe("applied");
      s = change.state;
      expect(lastAliasUpdate()).toMatchObject({
        FunctionName: "checkout",
        Name: "live",
        FunctionVersion: "7",
        RoutingConfig: { AdditionalVersionWeights: { "8": p / 100 } },
      });
    }
    const full = await r.setWeight(s, 100);
    expect(full.outcome).toBe("applied");
    expect(lastAliasUpdate()).toMatchObject({
      FunctionVersion: "8",
      RoutingConfig: { AdditionalVersionWeights: {} },
    });
    expect((await r.readWeights(full.state)).drift).toBe(false);
    // Every write carried the RevisionId it had just read.
    expect(
      lambda.commandCalls(UpdateAliasCommand).every((c) => c.args[0].input.RevisionId?.startsWith("rev")),
    ).toBe(true);
  });

  it("reports drift when someone else changed the alias weights, and overwrites only when told", async () => {
    const r = router();
    const s = (await r.setWeight(await ready(r), 5)).state;
    world.alias.RoutingConfig = { AdditionalVersionWeights: { "8": 0.5 } };
    world.alias.RevisionId = "rev-by-someone";
    const observed = await r.readWeights(s);
    expect(observed).toMatchObject({ drift: true, expectedCanary: 5 });
    expect(observed.canary).toBeCloseTo(50);
    const change = await r.setWeight(s, 10);
    expect(change.outcome).toBe("drift");
    expect(change.outcome === "drift" && change.message).toContain("receives 50% instead of 5%");
    expect(lambda.commandCalls(UpdateAliasCommand)).toHaveLength(1);
    expect((await r.setWeight(s, 10, { overwriteDrift: true })).outcome).toBe("applied");
    expect(lastAliasUpdate()?.RevisionId).toBe("rev-by-someone");
  });

  it("turns a concurrent alias change between read and write into AliasChangedError", async () => {
    const r = router();
    const s = await ready(r);
    lambda
      .on(UpdateAliasCommand)
      .rejects(Object.assign(new Error("revision"), { name: "PreconditionFailedException" }));
    const err = await r.setWeight(s, 5).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AliasChangedError);
    expect((err as Error).name).toBe("AliasChangedError");
  });

  it("promotes by pointing the alias at the new version with no routing config", async () => {
    const r = router();
    let s = (await r.setWeight(await ready(r), 25)).state;
    s = await r.promote(s, { scaleDownDelaySeconds: 30 });
    expect(lastAliasUpdate()).toMatchObject({
      FunctionVersion: "8",
      RoutingConfig: { AdditionalVersionWeights: {} },
    });
    expect(asLambda(s)).toMatchObject({ phase: "promoted", stableVersion: "8", previousVersion: "7" });
    expect(lambda.commandCalls(UpdateFunctionCodeCommand)).toHaveLength(1);
    expect((await r.scaleDown(s)).ready).toBe(true);
  });

  it("aborts before promotion by removing the routing config", async () => {
    const r = router();
    const s = (await r.setWeight(await ready(r), 25)).state;
    const res = await r.abort(s, { abortScaleDownDelaySeconds: 30 });
    expect(res.ready).toBe(true);
    expect(lastAliasUpdate()).toMatchObject({
      FunctionVersion: "7",
      RoutingConfig: { AdditionalVersionWeights: {} },
    });
    expect(world.alias.RoutingConfig?.AdditionalVersionWeights).toEqual({});
  });

  it("aborts after promotion by pointing the alias back at the previous version", async () => {
    const r = router();
    const s = await r.promote(await ready(r), { scaleDownDelaySeconds: 30 });
    clock.advance(3_600_000);
    const res = await r.abort(s, { abortScaleDownDelaySeconds: 30 });
    expect(res.ready).toBe(true);
    expect(world.alias.FunctionVersion).toBe("7");
    expect(asLambda(res.state).stableVersion).toBe("7");
  });

  it("cannot route by header and says how testers reach the candidate", async () => {
    const r = router();
    const s = await ready(r);
    const res = await r.setHeaderRoute(s, {
      name: "testers",
      match: [{ headerName: "X-Canary", headerValue: { exact: "always" } }],
    });
    expect(res.applied).toBe(false);
    expect(res.message).toContain("testers invoke checkout:8 directly");
    expect(lambda.commandCalls(UpdateAliasCommand)).toHaveLength(0);
  });

  it("refuses traffic before the candidate is published", async () => {
    const r = router();
    const { state } = await r.prepare();
    await expect(r.setWeight(state, 5)).rejects.toBeInstanceOf(TargetStateError);
  });
});
