import { signedFetch } from "@sfn-rollouts/test-support/signed-fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import { registryHost } from "../../functions/trigger/event.ts";
import { StoredAnalysisSchema } from "../../functions/workflow/analysis.ts";
import { LOCAL_ACCOUNT, LOCAL_REGION } from "../../local/asl/intrinsics.ts";
import { FORBIDDEN_BODY } from "../../local/aws/function-url.ts";
import { type ModelServer, startModel } from "../../local/demo/model.ts";
import { MODEL_VERSIONS, ModelUsers, writeModelSpec } from "../../local/demo/model-rollout.ts";
import { finished } from "../../local/demo/model-stack.ts";
import { type LocalDynamo, startDynamo } from "../../local/dynamo.ts";
import { type EmbeddedStack, startEmbeddedStack } from "../../local/stack.ts";
import { MODEL_ROUTER_URL } from "../../statemachine/providers.ts";

/**
 * A SageMaker model rollout with the model router, end to end on the embedded runtime in virtual
 * time: the synthesized stack drives the local SageMaker of the façade (endpoint configs, variants,
 * updates that take a minute), the synthesized router function behind its Function URL (AWS_IAM,
 * both run by the embedded runtime) calls the variants with `InvokeEndpoint` + `TargetVariant`,
 * users send their signed requests and feedback to that URL, and the judges read its `/compare`
 * at `{{rollout.modelRouter}}`, signed. v1 is the first release, v2 goes shadow → canary → promoted, v3
 * is rolled back by the feedback judge; the endpoint ends on v2's model alone.
 */
const ENDPOINT = "fraud";
const TABLE = "sagemaker-model-rollouts";
const digest = (n: number) => `sha256:${String(n).repeat(64)}`;
/** The image the trigger hands the target for a push of `digest(n)` to the `demo` repository. */
const image = (n: number) => `${registryHost(LOCAL_ACCOUNT, LOCAL_REGION)}/demo@${digest(n)}`;

describe("a SageMaker model rollout through the model router on the embedded runtime", () => {
  const clock = new ManualClock(Date.parse("2026-12-01T12:00:00Z"));
  let dynamo: LocalDynamo;
  let stack: EmbeddedStack;
  let router: string;
  /** Requests signed with the credentials the runtime gives its functions (the URL is AWS_IAM). */
  let send: typeof fetch;
  let users: ModelUsers;
  const models: ModelServer[] = [];

  beforeAll(async () => {
    for (const m of MODEL_VERSIONS) models.push(await startModel({ version: m.version, weights: m.weights }));
    dynamo = await startDynamo("dynalite");
    stack = await startEmbeddedStack({
      specFiles: writeModelSpec({ router: MODEL_ROUTER_URL, sigv4: true }),
      target: {
        type: "sagemaker",
        endpointName: ENDPOINT,
        executionRoleArn: "arn:aws:iam::000000000000:role/sagemaker-execution",
        pollSeconds: 10,
        router: { type: "model" },
      } as never,
      clock,
      dynamo,
      tableName: TABLE,
    });
    if (!stack.modelRouterUrl) throw new Error("the embedded runtime serves no model router URL");
    router = stack.modelRouterUrl;
    const env = stack.runtime.env;
    send = signedFetch(env.AWS_REGION as string, {
      accessKeyId: env.AWS_ACCESS_KEY_ID as string,
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY as string,
      sessionToken: env.AWS_SESSION_TOKEN as string,
    });
    const sagemaker = stack.runtime.sagemaker;
    models.forEach((m, i) => {
      sagemaker.serve(image(i + 1), m.url);
    });
    // The endpoint as CloudFormation creates it before any rollout: the image pushed first, v1.
    sagemaker.createModel({ ModelName: "fraud-v1", PrimaryContainer: { Image: image(1) } });
    sagemaker.createEndpointConfig({
      EndpointConfigName: "fraud-initial",
      ProductionVariants: [{ VariantName: "initial", ModelName: "fraud-v1", InitialVariantWeight: 1 }],
    });
    sagemaker.createEndpoint({ EndpointName: ENDPOINT, EndpointConfigName: "fraud-initial" });
    await stack.runtime.advanceBy(60_000);
    users = new ModelUsers(router, undefined, undefined, send);
  });

  afterAll(async () => {
    await stack?.close();
    await dynamo?.close();
    for (const m of models) await m.close();
  });

  /** Users send `rps` requests (and their feedback) each virtual second until the rollout of `tag` ends. */
  async function drive(tag: string, rps = 40, maxSeconds = 900) {
    for (let s = 0; s < maxSeconds; s++) {
      await stack.runtime.settle();
      const item = await stack.item();
      if (finished(tag)(item)) return item;
      if (item?.currentRevision?.tag === tag && item.phase === "Paused") {
        throw new Error(`${tag} paused: ${item.message}\n${(await measurements()).join("\n")}`);
      }
      await users.batch(rps);
      await stack.runtime.advanceBy(1000);
    }
    throw new Error(`${tag} did not finish in ${maxSeconds} s: ${JSON.stringify(await stack.item())}`);
  }

  async function measurements(): Promise<string[]> {
    const out: string[] = [];
    for (const run of await stack.store.listRuns(stack.rollout, StoredAnalysisSchema)) {
      for (const result of run.run.run.metricResults) {
        for (const x of result.measurements) out.push(`${result.name} ${x.phase} ${x.message ?? ""}`);
      }
    }
    return out;
  }

  /** The endpoint once its scale-down has run: its production variants' images and shadows. */
  async function settledEndpoint() {
    const sagemaker = stack.runtime.sagemaker;
    for (let i = 0; i < 600; i++) {
      const endpoint = sagemaker.describeEndpoint(ENDPOINT);
      if (endpoint.status === "InService" && endpoint.variants.length === 1) break;
      await stack.runtime.advanceBy(1000);
    }
    const endpoint = sagemaker.describeEndpoint(ENDPOINT);
    return {
      status: endpoint.status,
      images: endpoint.variants.map((v) => sagemaker.describeModel(v.ModelName).artifact),
      shadows: endpoint.shadows.length,
    };
  }

  /** Who answers a request now, by the model's own `version`. */
  async function answeredBy(user: string): Promise<string> {
    const res = await send(`${router}predict`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-user-id": user },
      body: JSON.stringify({ features: [1, 1] }),
    });
    return ((await res.json()) as { version: string }).version;
  }

  it("the synthesized router answers at its Function URL, and only signed requests", async () => {
    expect(router).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const unsigned = await fetch(`${router}predict`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-user-id": "u1" },
      body: JSON.stringify({ features: [1, 1] }),
    });
    expect(unsigned.status).toBe(403);
    expect(await unsigned.text()).toBe(FORBIDDEN_BODY);
    // The definitions the stack runs read the same URL where the spec says {{rollout.modelRouter}}.
    const definitions = JSON.stringify(stack.runtime.stack?.stateMachines.map((m) => m.definition));
    expect(definitions).not.toContain(MODEL_ROUTER_URL);
    expect(definitions).toContain(`"address":"${router.replace(/\/$/, "")}"`);
  });

  it("v1 is the first release, then v2 goes shadow → canary → promoted", async () => {
    await stack.push("v1", digest(1));
    expect((await drive("v1"))?.phase).toBe("Healthy");
    expect(await settledEndpoint()).toEqual({ status: "InService", images: [image(1)], shadows: 0 });

    await stack.push("v2", digest(2));
    const item = await drive("v2");
    expect(item?.phase).toBe("Healthy");
    expect(item?.weight).toBe(100);
    const lines = await measurements();
    expect(lines.some((l) => l.startsWith("disagreement Successful"))).toBe(true);
    expect(lines.filter((l) => l.startsWith("quality Successful")).length).toBeGreaterThanOrEqual(2);
    expect(await settledEndpoint()).toEqual({ status: "InService", images: [image(2)], shadows: 0 });
    for (const user of ["u1", "u2", "u3"]) expect(await answeredBy(user)).toBe("v2");
  }, 600_000);

  it("v3 passes the shadow and is rolled back by the feedback judge; the endpoint stays on v2", async () => {
    await stack.push("v3", digest(3));
    const item = await drive("v3");
    expect(item?.phase).toBe("Degraded");
    expect(item?.weight).toBe(0);
    expect(item?.message).toMatch(
      /Gate "quality" rolled back: candidate \d+\.\d% vs stable \d+\.\d% bad feedback/,
    );
    expect(await settledEndpoint()).toEqual({ status: "InService", images: [image(2)], shadows: 0 });
    for (const user of ["u1", "u2", "u3"]) expect(await answeredBy(user)).toBe("v2");
  }, 600_000);
});
