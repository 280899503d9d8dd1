import { credentials, type IamRouter, startIamRouter } from "@sfn-rollouts/test-support/iam-router";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { defaultProviders } from "../../functions/metrics/index.ts";
import { functionUrlRegion, SamplesMetricProvider } from "../../functions/metrics/samples.ts";
import { FORBIDDEN_BODY } from "../../local/aws/function-url.ts";
import { type Metric, MetricSchema } from "../../statemachine/spec.ts";

const region = "eu-west-1";

let router: IamRouter;
beforeAll(async () => {
  router = await startIamRouter(region);
});
afterAll(() => router?.close());

function metric(extra: Record<string, unknown> = {}): Metric {
  return MetricSchema.parse({
    name: "feedback",
    provider: { samples: { address: router.url.url, primary: "v1", candidate: "v2", window: 60, ...extra } },
  });
}

const now = new Date();

describe("the samples provider against a Function URL whose auth is AWS_IAM", () => {
  it("an unsigned read is refused with the Function URL's 403", async () => {
    const r = await defaultProviders().measure(metric(), { now });
    expect(r).toEqual({ ok: false, message: `received non 2xx response code: 403: ${FORBIDDEN_BODY}` });
  });

  it("a read signed with SigV4 (service lambda) gets both summaries", async () => {
    const r = await defaultProviders().measure(metric({ sigv4: {} }), { now });
    expect(r.ok).toBe(true);
    expect(r).toMatchObject({ result: { primary: { version: "v1" }, candidate: { version: "v2" } } });
  });

  it("a read signed with another secret, or for another region, is refused", async () => {
    vi.stubEnv("AWS_SECRET_ACCESS_KEY", "not-the-local-secret");
    try {
      const r = await defaultProviders().measure(metric({ sigv4: {} }), { now });
      expect(r).toEqual({ ok: false, message: `received non 2xx response code: 403: ${FORBIDDEN_BODY}` });
    } finally {
      vi.stubEnv("AWS_SECRET_ACCESS_KEY", credentials.secretAccessKey);
    }
    const elsewhere = await defaultProviders().measure(metric({ sigv4: { region: "us-east-1" } }), { now });
    expect(elsewhere).toMatchObject({ ok: false, message: expect.stringContaining("403") });
  });
});

describe("which reads are signed", () => {
  it("a Function URL host is signed for its own region; a look-alike host is not", async () => {
    expect(functionUrlRegion("abc123.lambda-url.eu-central-1.on.aws")).toBe("eu-central-1");
    expect(functionUrlRegion("abc123.lambda-url.eu-central-1.on.aws.evil.example")).toBeUndefined();
    expect(functionUrlRegion("127.0.0.1")).toBeUndefined();
    const seen: { url: string; headers: Record<string, string> }[] = [];
    const regions: string[] = [];
    const provider = new SamplesMetricProvider({
      fetch: async (input, init) => {
        seen.push({ url: String(input), headers: { ...(init?.headers as Record<string, string>) } });
        return new Response(JSON.stringify({ primary: {}, candidate: {} }), { status: 200 });
      },
      signerFor: (r) => {
        regions.push(r);
        return { sign: async (req) => ({ ...req, headers: { ...req.headers, authorization: "signed" } }) };
      },
    });
    const at = (address: string) =>
      MetricSchema.parse({ name: "m", provider: { samples: { address, primary: "a", candidate: "b" } } });
    await provider.measure(at("https://abc123.lambda-url.eu-central-1.on.aws"), { now });
    await provider.measure(at("https://abc123.lambda-url.eu-central-1.on.aws.evil.example"), { now });
    expect(regions).toEqual(["eu-central-1"]);
    expect(seen.map((s) => s.headers.authorization)).toEqual(["signed", undefined]);
  });

  it("sigv4: false leaves a Function URL host unsigned (auth NONE, read without credentials)", async () => {
    const signedFor: string[] = [];
    const seen: Array<string | undefined> = [];
    const provider = new SamplesMetricProvider({
      fetch: async (_input, init) => {
        seen.push({ ...(init?.headers as Record<string, string> | undefined) }.authorization);
        return new Response(JSON.stringify({ primary: {}, candidate: {} }), { status: 200 });
      },
      signerFor: (r) => {
        signedFor.push(r);
        return { sign: async (req) => ({ ...req, headers: { ...req.headers, authorization: "signed" } }) };
      },
    });
    const open = MetricSchema.parse({
      name: "m",
      provider: {
        samples: {
          address: "https://abc123.lambda-url.eu-central-1.on.aws",
          primary: "a",
          candidate: "b",
          sigv4: false,
        },
      },
    });
    expect(await provider.measure(open, { now })).toMatchObject({ ok: true });
    expect(signedFor).toEqual([]);
    expect(seen).toEqual([undefined]);
    expect(() =>
      MetricSchema.parse({
        name: "m",
        provider: { samples: { address: "https://x.example", primary: "a", candidate: "b", sigv4: true } },
      }),
    ).toThrow(/sigv4/);
  });

  it("a read that must be signed, in a build without a signer, says so", async () => {
    const r = await new SamplesMetricProvider().measure(metric({ sigv4: {} }), { now });
    expect(r).toEqual({ ok: false, message: "samples sigv4: signing is not configured in this build" });
  });

  it("an address the construct did not fill in ({{rollout.modelRouter}}) is an Error naming it", async () => {
    const unfilled = MetricSchema.parse({
      name: "m",
      provider: { samples: { address: "{{rollout.modelRouter}}", primary: "a", candidate: "b" } },
    });
    const r = await new SamplesMetricProvider().measure(unfilled, { now });
    expect(r).toMatchObject({
      ok: false,
      message: expect.stringContaining("{{rollout.modelRouter}} was not filled in"),
    });
  });
});
