import type { ServerResponse } from "node:http";
import { loadTemplateText, templateProblems } from "@sfn-rollouts/test-support/analysis-template";
import { DEAD_URL, type Recorded, startServer } from "@sfn-rollouts/test-support/http-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRun, nextTickAt, terminate, tick } from "../../functions/analysis/index.ts";
import { defaultProviders } from "../../functions/metrics/index.ts";
import { KAYENTA_RESUME_SECONDS, KayentaMetricProvider } from "../../functions/metrics/kayenta.ts";
import type { ProviderAnswer } from "../../functions/metrics/port.ts";
import { metricUpperBoundSeconds } from "../../statemachine/compile.ts";
import type { Metric } from "../../statemachine/spec.ts";

/**
 * The Kayenta provider against a local server speaking Kayenta's REST API (`GET /canaryConfig`,
 * `POST /canary/{configId}`, `GET /canary/{executionId}`). Every case of Argo Rollouts'
 * `metricproviders/kayenta/kayenta_test.go` is here, with its requests, bodies, phases and values:
 * TestRunSuccessfully, TestRunBadJobResponse, TestRunBadLookupResponse,
 * TestRunInvalidLookupResponse, TestRunEmptyExecutionId, TestResumeSuccessfully,
 * TestResumeBadResponse, TestResumeMissingScore, TestResumeFailure, TestResumeInconclusive,
 * TestResumeIncompleteStatus, TestResumeMissingCompleteStatus, TestRunStartAndEndOmitted,
 * TestRunLookback and TestRunStartAndEndMismatched; then the measurement as the analysis run keeps
 * it between ticks.
 */

const NOW = new Date(Date.UTC(2019, 2, 29, 1, 40, 0));
const RUN_STARTED = new Date(Date.UTC(2019, 2, 29, 1, 8, 34));
const EXECUTION = "01DS50WVHAWSTAQACJKB1VKDQB";

/** kayenta_test.go's configIdLookupResponse. */
const CONFIGS = `[
  {"id": "69a6c352-7033-4ca1-858b-02497e5cc672", "name": "ValidationCanaryConfigWF", "updatedTimestamp": 1556747152000, "updatedTimestampIso": "2019-05-01T21:45:52Z", "applications": ["guestbook"]},
  {"id": "99d93685-4f70-4e8b-aa6d-6c47bdb4ab94", "name": "ValidationCanaryConfigTest", "updatedTimestamp": 1542305351000, "updatedTimestampIso": "2018-11-15T18:09:11Z", "applications": ["guestbook"]},
  {"id": "bf9795c0-170f-403e-bb7f-fef3f9a44d42", "name": "ValidationCanaryConfigTest3", "updatedTimestamp": 1553707842000, "updatedTimestampIso": "2019-03-27T17:30:42Z", "applications": ["guestbook"]},
  {"id": "872bb4d3-3309-48e6-9203-2a456a5c2ce7", "name": "ValidationCanaryConfigTest2", "updatedTimestamp": 1542306335000, "updatedTimestampIso": "2018-11-15T18:25:35Z", "applications": ["guestbook"]}
]`;

/** kayenta_test.go's expectedBody. */
const EXPECTED_BODY = {
  scopes: {
    default: {
      controlScope: {
        scope: "app=guestbook and rollouts-pod-template-hash=xxxx",
        location: "us-=west-2",
        step: 60,
        start: "2019-03-29T01:08:34Z",
        end: "2019-03-29T01:38:34Z",
      },
      experimentScope: {
        scope: "app=guestbook and rollouts-pod-template-hash=yyyy",
        location: "us-=west-2",
        step: 60,
        start: "2019-03-29T01:08:34Z",
        end: "2019-03-29T01:38:34Z",
      },
    },
  },
  thresholds: { pass: 90, marginal: 75 },
};

type Reply = (req: Recorded, res: ServerResponse) => void;
let onLookup: Reply;
let onStart: Reply;
let onRead: Reply;
let kayenta: Awaited<ReturnType<typeof startServer>>;

beforeAll(async () => {
  kayenta = await startServer((req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    if (req.method === "GET" && path === "/canaryConfig") onLookup(req, res);
    else if (req.method === "POST" && path.startsWith("/canary/")) onStart(req, res);
    else if (req.method === "GET" && path.startsWith("/canary/")) onRead(req, res);
    else {
      res.writeHead(404);
      res.end();
    }
  });
});
afterAll(async () => {
  await kayenta?.close();
});

const answer =
  (body: string, status = 200): Reply =>
  (_req, res) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(body);
  };

const executionStatus = (body: string) => answer(body);

interface ScopeSides {
  controlStart?: string;
  experimentStart?: string;
  controlEnd?: string;
  experimentEnd?: string;
}

/** kayenta_test.go's buildMetric, as an AnalysisTemplate; `sides` replaces the scope's starts and ends. */
function template(address: string, sides: ScopeSides = {}, extra = "", metricExtra = ""): string {
  const start = (v: string | undefined) =>
    v === undefined ? `start: "2019-03-29T01:08:34Z"` : v ? `start: "${v}"` : "";
  const end = (v: string | undefined) =>
    v === undefined ? `end: "2019-03-29T01:38:34Z"` : v ? `end: "${v}"` : "";
  return `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: kayenta}
spec:
  metrics:
    - name: mann-whitney
${metricExtra}
      provider:
        kayenta:
          address: ${address}
          application: guestbook
          canaryConfigName: ValidationCanaryConfigTest3
          metricsAccountName: wavefront-prod
          configurationAccountName: intuit-kayenta
          storageAccountName: intuit-kayenta
          threshold: {pass: 90, marginal: 75}
${extra}
          scopes:
            - name: default
              controlScope:
                scope: app=guestbook and rollouts-pod-template-hash=xxxx
                step: 60
                region: us-=west-2
                ${start(sides.controlStart)}
                ${end(sides.controlEnd)}
              experimentScope:
                scope: app=guestbook and rollouts-pod-template-hash=yyyy
                step: 60
                region: us-=west-2
                ${start(sides.experimentStart)}
                ${end(sides.experimentEnd)}
`;
}

async function metricOf(yaml: string): Promise<Metric> {
  const spec = await loadTemplateText(yaml);
  return spec.templates[0]?.metrics[0] as Metric;
}

const provider = new KayentaMetricProvider();
const ctx = { now: NOW, startedAt: RUN_STARTED };

async function run(sides: ScopeSides = {}, extra = "", metricExtra = ""): Promise<ProviderAnswer> {
  return provider.measure(await metricOf(template(kayenta.url, sides, extra, metricExtra)), ctx);
}

async function resume(): Promise<ProviderAnswer> {
  const metric = await metricOf(template(kayenta.url));
  return provider.resume(metric, { metadata: { canaryExecutionId: EXECUTION }, startedAt: NOW }, ctx);
}

const requestsSince = (n: number) => kayenta.requests.slice(n);

describe("Run: the config looked up by name, the canary execution started (kayenta_test.go)", () => {
  it("finds the config's id, POSTs Argo's request, and is Running with the execution's id (TestRunSuccessfully)", async () => {
    onLookup = answer(CONFIGS);
    onStart = answer(`{"canaryExecutionId" : "${EXECUTION}"}`);
    const before = kayenta.requests.length;
    expect(await run()).toEqual({
      ok: "running",
      metadata: { canaryExecutionId: EXECUTION },
      resumeAfterSeconds: KAYENTA_RESUME_SECONDS,
    });
    const [lookup, start] = requestsSince(before);
    // Argo's lookup sends the storage account as configurationAccountName.
    expect(lookup?.url).toBe("/canaryConfig?application=guestbook&configurationAccountName=intuit-kayenta");
    expect(start?.method).toBe("POST");
    expect(start?.url).toBe(
      "/canary/bf9795c0-170f-403e-bb7f-fef3f9a44d42?application=guestbook&metricsAccountName=wavefront-prod&configurationAccountName=intuit-kayenta&storageAccountName=intuit-kayenta",
    );
    expect(start?.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(start?.body ?? "")).toEqual(EXPECTED_BODY);
    // Go's json.Marshal: the struct's fields in their declared order.
    expect(start?.body).toContain(
      `"controlScope":{"scope":"app=guestbook and rollouts-pod-template-hash=xxxx","location":"us-=west-2","step":60,"start":"2019-03-29T01:08:34Z","end":"2019-03-29T01:38:34Z"}`,
    );
  });

  it("a 500 from the execution's start is an Error, `Invalid Response` (TestRunBadJobResponse)", async () => {
    onLookup = answer(CONFIGS);
    onStart = answer("", 500);
    expect(await run()).toEqual({ ok: false, message: "Invalid Response" });
  });

  it("a 500 from the lookup is an Error, `Invalid Response: HTTP 500`, and nothing is started (TestRunBadLookupResponse)", async () => {
    onLookup = answer("", 500);
    onStart = answer(`{"canaryExecutionId": "x"}`);
    const before = kayenta.requests.length;
    expect(await run()).toEqual({ ok: false, message: "Invalid Response: HTTP 500" });
    expect(requestsSince(before).map((r) => r.method)).toEqual(["GET"]);
  });

  it("a lookup answer that is not a list is Go's decoding error (TestRunInvalidLookupResponse)", async () => {
    onLookup = answer(`{"this is bad": "yee"}`);
    expect(await run()).toEqual({
      ok: false,
      message: "json: cannot unmarshal object into Go value of type []kayenta.canaryConfig",
    });
  });

  it("an empty canaryExecutionId is an Error, `Invalid canaryExecutionId` (TestRunEmptyExecutionId)", async () => {
    onLookup = answer(CONFIGS);
    onStart = answer(`{"canaryExecutionId" : ""}`);
    expect(await run()).toEqual({ ok: false, message: "Invalid canaryExecutionId" });
  });

  it("an empty start is one interval before the measurement; the given end is kept (TestRunStartAndEndOmitted)", async () => {
    onLookup = answer(CONFIGS);
    onStart = answer(`{"canaryExecutionId": "${EXECUTION}"}`);
    const before = kayenta.requests.length;
    const out = await run({ controlStart: "", experimentStart: "" }, "", "      interval: 5m");
    expect(out.ok).toBe("running");
    const body = JSON.parse(requestsSince(before)[1]?.body ?? "");
    expect(body.scopes.default.controlScope).toMatchObject({
      start: "2019-03-29T01:35:00Z",
      end: "2019-03-29T01:38:34Z",
    });
    expect(body.scopes.default.experimentScope).toMatchObject({
      start: "2019-03-29T01:35:00Z",
      end: "2019-03-29T01:38:34Z",
    });
  });

  it("with lookback an empty start is the run's start (TestRunLookback)", async () => {
    onLookup = answer(CONFIGS);
    onStart = answer(`{"canaryExecutionId": "${EXECUTION}"}`);
    const before = kayenta.requests.length;
    const out = await run(
      { controlStart: "", experimentStart: "" },
      "          lookback: true",
      "      interval: 5m",
    );
    expect(out.ok).toBe("running");
    const body = JSON.parse(requestsSince(before)[1]?.body ?? "");
    expect(body.scopes.default.controlScope.start).toBe("2019-03-29T01:08:34Z");
    expect(body.scopes.default.experimentScope.start).toBe("2019-03-29T01:08:34Z");
  });

  it("an empty start and end are the interval before now and now", async () => {
    onLookup = answer(CONFIGS);
    onStart = answer(`{"canaryExecutionId": "${EXECUTION}"}`);
    const before = kayenta.requests.length;
    const sides = { controlStart: "", experimentStart: "", controlEnd: "", experimentEnd: "" };
    await run(sides, "", "      interval: 10m");
    const body = JSON.parse(requestsSince(before)[1]?.body ?? "");
    expect(body.scopes.default.controlScope).toMatchObject({
      start: "2019-03-29T01:30:00Z",
      end: "2019-03-29T01:40:00Z",
    });
  });

  it("an empty start without an interval or lookback is Go's duration error, as in Argo", async () => {
    onLookup = answer(CONFIGS);
    expect(await run({ controlStart: "", experimentStart: "" })).toEqual({
      ok: false,
      message: 'Invalid duration "": time: invalid duration ""',
    });
  });

  it("a config name Kayenta does not hold is `Canary config not found`", async () => {
    onLookup = answer(`[{"id": "a", "name": "Other"}]`);
    expect(await run()).toEqual({ ok: false, message: "Canary config not found" });
  });

  it("an unreachable Kayenta is Go's client error", async () => {
    const out = await provider.measure(await metricOf(template(DEAD_URL)), ctx);
    expect(out).toMatchObject({
      ok: false,
      message: expect.stringContaining(`Get "${DEAD_URL}/canaryConfig?`),
    });
  });
});

describe("one start without the other is refused (TestRunStartAndEndMismatched)", () => {
  const cases: Array<[ScopeSides, string]> = [
    [{ controlStart: "" }, "controlScope.start and experimentScope.start must both be set or be empty"],
    [{ experimentStart: "" }, "controlScope.start and experimentScope.start must both be set or be empty"],
    [{ controlEnd: "" }, "controlScope.end and experimentScope.end must both be set or be empty"],
    [{ experimentEnd: "" }, "controlScope.end and experimentScope.end must both be set or be empty"],
  ];

  it.each(cases)("%o: when the template is loaded, at the scope", async (sides, message) => {
    expect(await templateProblems(template("http://kayenta", sides))).toEqual([
      expect.stringMatching(
        new RegExp(`spec\\.metrics\\[0\\]\\.provider\\.kayenta\\.scopes\\[0\\]: ${message}$`),
      ),
    ]);
  });

  it.each(cases)("%o: by the provider, without a request to start an execution", async (sides, message) => {
    onLookup = answer(CONFIGS);
    onStart = answer(`{"canaryExecutionId": "${EXECUTION}"}`);
    const metric = await metricOf(template(kayenta.url));
    const scope = metric.provider.kayenta?.scopes[0];
    if (!scope) throw new Error("the template has a scope");
    if (sides.controlStart === "") scope.controlScope.start = "";
    if (sides.experimentStart === "") scope.experimentScope.start = "";
    if (sides.controlEnd === "") scope.controlScope.end = "";
    if (sides.experimentEnd === "") scope.experimentScope.end = "";
    const before = kayenta.requests.length;
    expect(await provider.measure(metric, ctx)).toEqual({ ok: false, message });
    expect(requestsSince(before).some((r) => r.method === "POST")).toBe(false);
  });
});

describe("Resume: the execution read until it is complete (kayenta_test.go)", () => {
  it("reads /canary/{id}; a score of 100 is Successful, value `100` (TestResumeSuccessfully)", async () => {
    onRead = executionStatus(`{"complete": true, "result": {"judgeResult": {"score": {"score": 100.0}}}}`);
    const before = kayenta.requests.length;
    expect(await resume()).toMatchObject({ ok: true, value: "100", phase: "Successful" });
    expect(requestsSince(before).map((r) => `${r.method} ${r.url}`)).toEqual([`GET /canary/${EXECUTION}`]);
  });

  it("a 500 is an Error, `Invalid Response` (TestResumeBadResponse)", async () => {
    onRead = answer("", 500);
    expect(await resume()).toMatchObject({ ok: false, message: "Invalid Response" });
  });

  it("no score is an Error, `Missing Score` (TestResumeMissingScore)", async () => {
    onRead = executionStatus(`{"complete": true, "result": {"judgeResult": {}}}`);
    expect(await resume()).toMatchObject({ ok: false, message: "Missing Score" });
  });

  it("60, below marginal, is Failed (TestResumeFailure)", async () => {
    onRead = executionStatus(`{"complete": true, "result": {"judgeResult": {"score": {"score": 60.0}}}}`);
    expect(await resume()).toMatchObject({ ok: true, value: "60", phase: "Failed" });
  });

  it("80, between marginal and pass, is Inconclusive (TestResumeInconclusive)", async () => {
    onRead = executionStatus(`{"complete": true, "result": {"judgeResult": {"score": {"score": 80.0}}}}`);
    expect(await resume()).toMatchObject({ ok: true, value: "80", phase: "Inconclusive" });
  });

  it("complete: false is Running again, the execution's id kept (TestResumeIncompleteStatus)", async () => {
    onRead = executionStatus(`{"complete": false, "result": {"judgeResult": {"score": {"score": 80.0}}}}`);
    expect(await resume()).toEqual({
      ok: "running",
      metadata: { canaryExecutionId: EXECUTION },
      resumeAfterSeconds: KAYENTA_RESUME_SECONDS,
    });
  });

  it("no complete field is an Error, `Missing Complete Status` (TestResumeMissingCompleteStatus)", async () => {
    onRead = executionStatus(`{"result": {"judgeResult": {"score": {"score": 80.0}}}}`);
    expect(await resume()).toMatchObject({ ok: false, message: "Missing Complete Status" });
  });

  it("a score is cut to a whole number, as Argo's int(score); pass and marginal are inclusive", async () => {
    onRead = executionStatus(`{"complete": true, "result": {"judgeResult": {"score": {"score": 89.99}}}}`);
    expect(await resume()).toMatchObject({ value: "89", phase: "Inconclusive" });
    onRead = executionStatus(`{"complete": true, "result": {"judgeResult": {"score": {"score": 90}}}}`);
    expect(await resume()).toMatchObject({ value: "90", phase: "Successful" });
    onRead = executionStatus(`{"complete": true, "result": {"judgeResult": {"score": {"score": 74.5}}}}`);
    expect(await resume()).toMatchObject({ value: "74", phase: "Failed" });
  });

  it("a field of the wrong type is apimachinery's accessor error", async () => {
    onRead = executionStatus(`{"complete": "yes"}`);
    expect(await resume()).toMatchObject({
      ok: false,
      message: ".complete accessor error: yes is of the type string, expected bool",
    });
    onRead = executionStatus(`{"complete": true, "result": {"judgeResult": {"score": {"score": "80"}}}}`);
    expect(await resume()).toMatchObject({
      message: ".result.judgeResult.score.score accessor error: 80 is of the type string, expected float64",
    });
    onRead = executionStatus(`{"complete": true, "result": {"judgeResult": 5}}`);
    expect(await resume()).toMatchObject({
      message:
        ".result.judgeResult.score accessor error: 5 is of the type float64, expected map[string]interface{}",
    });
  });
});

describe("a Kayenta measurement in an analysis run", () => {
  const yaml = (metricExtra: string) => template(kayenta.url, {}, "", metricExtra);

  it("is stored Running, resumed when it asked, and counted only once complete", async () => {
    onLookup = answer(CONFIGS);
    onStart = answer(`{"canaryExecutionId": "${EXECUTION}"}`);
    onRead = executionStatus(`{"complete": false}`);
    const spec = await loadTemplateText(yaml(""));
    const providers = defaultProviders();
    const t0 = NOW;
    let r = await tick(createRun(spec, t0), t0, providers);
    let result = r.metricResults[0];
    expect(r.phase).toBe("Running");
    expect(result).toMatchObject({ phase: "Running", count: 0, held: 0, error: 0 });
    expect(result?.measurements).toEqual([
      {
        phase: "Running",
        startedAt: t0.toISOString(),
        finishedAt: t0.toISOString(),
        resumeAt: new Date(t0.getTime() + 15_000).toISOString(),
        metadata: { canaryExecutionId: EXECUTION },
      },
    ]);
    expect(nextTickAt(r)).toEqual(new Date(t0.getTime() + 15_000));

    // Before its resume time nothing is asked.
    const before = kayenta.requests.length;
    r = await tick(r, new Date(t0.getTime() + 5_000), providers);
    expect(kayenta.requests.length).toBe(before);

    const t1 = new Date(t0.getTime() + 15_000);
    r = await tick(r, t1, providers);
    result = r.metricResults[0];
    expect(result?.measurements).toHaveLength(1);
    expect(result?.measurements[0]).toMatchObject({
      phase: "Running",
      startedAt: t0.toISOString(),
      resumeAt: new Date(t1.getTime() + 15_000).toISOString(),
    });
    expect(result?.count).toBe(0);

    onRead = executionStatus(`{"complete": true, "result": {"judgeResult": {"score": {"score": 95}}}}`);
    const t2 = new Date(t1.getTime() + 15_000);
    r = await tick(r, t2, providers);
    result = r.metricResults[0];
    expect(result?.measurements).toEqual([
      {
        phase: "Successful",
        value: "95",
        startedAt: t0.toISOString(),
        finishedAt: t2.toISOString(),
        metadata: { canaryExecutionId: EXECUTION },
      },
    ]);
    expect(result).toMatchObject({ phase: "Successful", count: 1, successful: 1 });
    expect(r.phase).toBe("Successful");
  });

  it("decides on the score, not the metric's conditions", async () => {
    onLookup = answer(CONFIGS);
    onStart = answer(`{"canaryExecutionId": "${EXECUTION}"}`);
    onRead = executionStatus(`{"complete": true, "result": {"judgeResult": {"score": {"score": 50}}}}`);
    const spec = await loadTemplateText(yaml("      successCondition: result >= 0"));
    const providers = defaultProviders();
    let r = await tick(createRun(spec, NOW), NOW, providers);
    r = await tick(r, new Date(NOW.getTime() + 15_000), providers);
    expect(r.metricResults[0]?.measurements.map((m) => `${m.phase} ${m.value}`)).toEqual(["Failed 50"]);
    expect(r.phase).toBe("Failed");
    expect(r.message).toBe('Metric "mann-whitney" assessed Failed due to failed (1) > failureLimit (0)');
  });

  it("an Error while resuming counts towards consecutiveErrorLimit, and the next measurement starts a new execution 10 s later", async () => {
    onLookup = answer(CONFIGS);
    onStart = answer(`{"canaryExecutionId": "${EXECUTION}"}`);
    onRead = answer("", 503);
    const spec = await loadTemplateText(yaml("      consecutiveErrorLimit: 1"));
    const providers = defaultProviders();
    let r = await tick(createRun(spec, NOW), NOW, providers);
    const t1 = new Date(NOW.getTime() + 15_000);
    r = await tick(r, t1, providers);
    expect(r.metricResults[0]).toMatchObject({ phase: "Running", error: 1, consecutiveError: 1, count: 0 });
    expect(r.metricResults[0]?.measurements.map((m) => m.phase)).toEqual(["Error"]);
    expect(nextTickAt(r)).toEqual(new Date(t1.getTime() + 10_000));
    const starts = kayenta.requests.filter((q) => q.method === "POST").length;
    r = await tick(r, new Date(t1.getTime() + 10_000), providers);
    expect(kayenta.requests.filter((q) => q.method === "POST").length).toBe(starts + 1);
    r = await tick(r, new Date(t1.getTime() + 25_000), providers);
    expect(r.phase).toBe("Error");
    expect(r.message).toBe(
      'Metric "mann-whitney" assessed Error due to consecutiveErrors (2) > consecutiveErrorLimit (1): "Error Message: Invalid Response"',
    );
  });

  it("an execution that never completes is an Error after 600 s, not a measurement without end", async () => {
    onLookup = answer(CONFIGS);
    onStart = answer(`{"canaryExecutionId": "${EXECUTION}"}`);
    onRead = executionStatus(`{"complete": false}`);
    const spec = await loadTemplateText(yaml("      consecutiveErrorLimit: 0"));
    const providers = defaultProviders();
    let r = await tick(createRun(spec, NOW), NOW, providers);
    let ticks = 0;
    while (r.phase === "Running" && ticks < 100) {
      const at = nextTickAt(r);
      if (!at) break;
      r = await tick(r, at, providers);
      ticks++;
    }
    expect(ticks).toBe(40);
    expect(r.phase).toBe("Error");
    expect(r.metricResults[0]?.measurements).toEqual([
      expect.objectContaining({
        phase: "Error",
        message: "the measurement is still running after 600s, the most one may run (600s)",
        startedAt: NOW.toISOString(),
      }),
    ]);
  });

  it("a run terminated while an execution runs ends, as Argo's: Successful, Run Terminated, the measurement left Running", async () => {
    onLookup = answer(CONFIGS);
    onStart = answer(`{"canaryExecutionId": "${EXECUTION}"}`);
    const spec = await loadTemplateText(yaml(""));
    const r = await tick(createRun(spec, NOW), NOW, defaultProviders());
    const ended = terminate(r, new Date(NOW.getTime() + 1_000));
    expect(ended.phase).toBe("Successful");
    expect(ended.message).toBe("Run Terminated");
    expect(ended.metricResults[0]).toMatchObject({ phase: "Running", count: 0 });
    expect(nextTickAt(ended)).toBeUndefined();
  });
});

describe("loading", () => {
  it("normalizes Argo's fields with their defaults", async () => {
    const metric = await metricOf(template("http://kayenta.example.com"));
    expect(metric.provider.kayenta).toEqual({
      address: "http://kayenta.example.com",
      application: "guestbook",
      canaryConfigName: "ValidationCanaryConfigTest3",
      metricsAccountName: "wavefront-prod",
      configurationAccountName: "intuit-kayenta",
      storageAccountName: "intuit-kayenta",
      threshold: { pass: 90, marginal: 75 },
      lookback: false,
      scopes: [
        {
          name: "default",
          controlScope: {
            scope: "app=guestbook and rollouts-pod-template-hash=xxxx",
            region: "us-=west-2",
            step: 60,
            start: "2019-03-29T01:08:34Z",
            end: "2019-03-29T01:38:34Z",
          },
          experimentScope: {
            scope: "app=guestbook and rollouts-pod-template-hash=yyyy",
            region: "us-=west-2",
            step: 60,
            start: "2019-03-29T01:08:34Z",
            end: "2019-03-29T01:38:34Z",
          },
        },
      ],
    });
  });

  it("an analysis step's bound allows each attempt its 600 s of running", async () => {
    const metric = await metricOf(template("http://kayenta.example.com"));
    // One measurement, up to 5 attempts (consecutiveErrorLimit 4), each retried 10 s after an Error.
    const withoutRunning = 5 * 10;
    expect(metricUpperBoundSeconds(metric)).toBe(withoutRunning + (5 + 1) * 600);
    const { kayenta: _kayenta, ...others } = metric.provider;
    expect(
      metricUpperBoundSeconds({
        ...metric,
        provider: { ...others, web: { url: "http://x" } } as Metric["provider"],
      }),
    ).toBe(withoutRunning);
  });

  it("refuses an address that is not an http(s) URL, at its path", async () => {
    expect(await templateProblems(template("kayenta.example.com"))).toEqual([
      expect.stringMatching(
        /spec\.metrics\[0\]\.provider\.kayenta\.address: Kayenta address "kayenta\.example\.com" is not an http:\/\/ or https:\/\/ URL$/,
      ),
    ]);
  });

  it("refuses an unknown field, at its path", async () => {
    const problems = await templateProblems(template("http://k", {}, "          thresholds: {pass: 1}"));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain("spec.metrics[0].provider.kayenta");
    expect(problems[0]).toContain("thresholds");
  });
});
