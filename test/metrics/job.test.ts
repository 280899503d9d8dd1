import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import { defaultProviders } from "../../functions/metrics/index.ts";
import {
  JOB_NAME_KEY,
  JOB_RESUME_SECONDS,
  JobMetricProvider,
  type JobMetricSpec,
  JobMetrics,
  type JobRunRef,
  metricJob,
  runUid,
} from "../../functions/metrics/job.ts";
import { type KubeCall, KubeClient } from "../../functions/traffic/kubernetes/client.ts";
import { type KubeApi, startKubeApi } from "../../local/kube/server.ts";
import type { JsonBody } from "../local/kube/client.ts";

/**
 * The Job provider against the local Kubernetes API (port 0, virtual time). The cases are those
 * of Argo Rollouts' `metricproviders/job/job_test.go`, each against a real API server's answers
 * instead of client-go's fake clientset.
 */

let kube: KubeApi;
let clock: ManualClock;
let calls: KubeCall[];
let provider: JobMetricProvider;

const RUN: JobRunRef = { uid: "dummyuid", name: "dummyrun", namespace: "dummynamespace" };
const METRIC: JobMetricSpec = {
  name: "dummymetric",
  spec: {
    backoffLimit: 0,
    template: {
      spec: {
        restartPolicy: "Never",
        containers: [{ name: "dummy", image: "busybox", command: ["dosomething"] }],
      },
    },
  },
};
const JOBS = `/apis/batch/v1/namespaces/${RUN.namespace}/jobs`;

function clientOf(server: string): KubeClient {
  return new KubeClient({ timeoutMs: 5000, endpoint: async () => ({ server, token: "local" }) }, (call) =>
    calls.push(call),
  );
}

/** The address of a server that was listening and is not any more: every call to it fails. */
async function closedServer(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

async function get(path: string): Promise<{ status: number; body: JsonBody }> {
  const res = await fetch(`${kube.url}${path}`);
  return { status: res.status, body: (await res.json()) as JsonBody };
}

async function post(path: string, body: unknown): Promise<number> {
  const res = await fetch(`${kube.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res.status;
}

/** Argo's `newJob`: a Job of the run, with a condition of `type` once it has ended. */
function withCommand(exit: number): JobMetricSpec {
  return {
    ...METRIC,
    spec: {
      template: {
        spec: {
          restartPolicy: "Never",
          containers: [{ name: "dummy", image: "busybox", command: ["sh", "-c", `exit ${exit}`] }],
        },
      },
    },
  };
}

beforeEach(async () => {
  clock = new ManualClock(Date.parse("2026-01-01T00:00:00Z"));
  kube = await startKubeApi({
    clock,
    syncIntervalMs: 0,
    namespaces: ["default", RUN.namespace],
    jobRunMs: 5000,
  });
  calls = [];
  provider = new JobMetricProvider(clientOf(kube.url));
});
afterEach(async () => {
  await kube.close();
});

describe("Run (job_test.go TestRun, TestRunCreateFail, TestRunCreateCollision)", () => {
  it("creates the Job <uid>.<metric>.<n> with the run's label and annotations over the metric's own", async () => {
    const metric: JobMetricSpec = {
      ...METRIC,
      metadata: { labels: { "foo-label": "bar" }, annotations: { "foo-annotation": "bar" } },
    };
    const answer = await provider.run(RUN, metric, 1);
    expect(answer).toEqual({
      ok: "running",
      metadata: { [JOB_NAME_KEY]: "dummyuid.dummymetric.1" },
      resumeAfterSeconds: JOB_RESUME_SECONDS,
    });
    const jobs = (await get(JOBS)).body.items as Array<JsonBody>;
    expect(jobs.map((j) => j.metadata.name)).toEqual(["dummyuid.dummymetric.1"]);
    expect(jobs[0]?.metadata.labels).toEqual({
      "foo-label": "bar",
      "analysisrun.argoproj.io/uid": "dummyuid",
    });
    expect(jobs[0]?.metadata.annotations).toEqual({
      "foo-annotation": "bar",
      "analysisrun.argoproj.io/name": "dummyrun",
      "analysisrun.argoproj.io/metric-name": "dummymetric",
    });
    // No owner: an ownerReference to an AnalysisRun the cluster does not hold would be collected.
    expect(jobs[0]?.metadata.ownerReferences).toBeUndefined();
    expect(jobs[0]?.spec.template.spec.containers[0].command).toEqual(["dosomething"]);

    // The next measurement's Job takes the next number.
    const again = await provider.run(RUN, metric, 2);
    expect(again).toMatchObject({ ok: "running", metadata: { [JOB_NAME_KEY]: "dummyuid.dummymetric.2" } });
    expect(calls.filter((c) => c.verb === "create")).toEqual([
      { verb: "create", group: "batch", resource: "jobs", namespace: RUN.namespace },
      { verb: "create", group: "batch", resource: "jobs", namespace: RUN.namespace },
    ]);
  });

  it("is an Error with the API server's message when the create fails", async () => {
    const answer = await provider.run({ ...RUN, namespace: "nowhere" }, METRIC, 1);
    expect(answer.ok).toBe(false);
    expect(answer).toMatchObject({ message: expect.stringContaining('namespaces "nowhere" not found') });
    // A Job the API refuses as invalid: the field named.
    const invalid = await provider.run(
      RUN,
      { ...METRIC, spec: { template: { spec: { containers: [] } } } },
      1,
    );
    expect(invalid).toMatchObject({
      ok: false,
      message: expect.stringContaining("spec.template.spec.restartPolicy"),
    });
  });

  it("takes the Job already there when it is this run's (a retried create)", async () => {
    expect(await post(JOBS, metricJob(RUN, METRIC, 1))).toBe(201);
    const answer = await provider.run(RUN, METRIC, 1);
    expect(answer).toMatchObject({ ok: "running", metadata: { [JOB_NAME_KEY]: "dummyuid.dummymetric.1" } });
  });

  it("is an Error when the Job of that name belongs to another run", async () => {
    const other = metricJob({ ...RUN, uid: "otheruid" }, METRIC, 1);
    other.metadata.name = "dummyuid.dummymetric.1";
    expect(await post(JOBS, other)).toBe(201);
    const answer = await provider.run(RUN, METRIC, 1);
    expect(answer).toMatchObject({ ok: false, message: expect.stringContaining("already exists") });
  });
});

describe("Resume (TestResumeCompletedJob, TestResumeFailedJob, TestResumeErrorJob, TestResumeMeasurementNoMetadata)", () => {
  it("is Running while the Job runs, Successful once it completes", async () => {
    const started = await provider.run(RUN, withCommand(0), 1);
    if (started.ok !== "running") throw new Error("not running");
    clock.advance(4999);
    expect(await provider.resume(RUN, started.metadata)).toEqual({
      ok: "running",
      metadata: started.metadata,
      resumeAfterSeconds: JOB_RESUME_SECONDS,
    });
    clock.advance(1);
    expect(await provider.resume(RUN, started.metadata)).toEqual({
      ok: true,
      result: undefined,
      value: "",
      phase: "Successful",
      metadata: started.metadata,
    });
  });

  it("is Failed once the Job fails", async () => {
    const started = await provider.run(RUN, withCommand(1), 1);
    if (started.ok !== "running") throw new Error("not running");
    clock.advance(5000);
    expect(await provider.resume(RUN, started.metadata)).toMatchObject({
      ok: true,
      phase: "Failed",
      value: "",
    });
  });

  it("is an Error naming the Job when it does not exist", async () => {
    expect(await provider.resume(RUN, { [JOB_NAME_KEY]: "job-which-does-not-exist" })).toMatchObject({
      ok: false,
      message: 'job.batch "job-which-does-not-exist" not found',
    });
  });

  it("is an Error when the measurement names no Job", async () => {
    expect(await provider.resume(RUN, {})).toEqual({ ok: false, message: "job metadata reference missing" });
  });
});

describe("Terminate (TestTerminateMeasurement, TestTerminateError, TestTerminateMeasurementNoMetadata)", () => {
  it("deletes the Job and ends Successful, whether the Job is there or not", async () => {
    const started = await provider.run(RUN, METRIC, 1);
    if (started.ok !== "running") throw new Error("not running");
    for (let i = 0; i < 2; i++) {
      expect(await provider.terminate(RUN, started.metadata)).toMatchObject({
        ok: true,
        phase: "Successful",
      });
      expect((await get(`${JOBS}/dummyuid.dummymetric.1`)).status).toBe(404);
    }
    expect(calls.filter((c) => c.verb === "delete")).toHaveLength(2);
  });

  it("is an Error with the reason when the delete fails", async () => {
    const gone = await closedServer();
    const answer = await new JobMetricProvider(clientOf(gone)).terminate(RUN, {
      [JOB_NAME_KEY]: "doesnt-matter",
    });
    expect(answer).toMatchObject({
      ok: false,
      message: expect.stringContaining(`DELETE ${gone}/apis/batch/v1`),
    });
  });

  it("is an Error when the measurement names no Job", async () => {
    expect(await provider.terminate(RUN, {})).toEqual({
      ok: false,
      message: "job metadata reference missing",
    });
  });
});

describe("GarbageCollect (TestGarbageCollect)", () => {
  it("keeps the run's newest Jobs and deletes the older ones", async () => {
    for (let i = 0; i < 12; i++) {
      const job = metricJob(RUN, METRIC, 1);
      job.metadata.name = `dummyrun-metric-abc123-${i}`;
      expect(await post(JOBS, job)).toBe(201);
      clock.advance(1000);
    }
    // Another run's Job is not this run's to collect.
    expect(await post(JOBS, metricJob({ ...RUN, uid: "otheruid" }, METRIC, 1))).toBe(201);
    expect(await provider.garbageCollect(RUN, 10)).toBeUndefined();
    const names = ((await get(JOBS)).body.items as Array<{ metadata: { name: string } }>).map(
      (j) => j.metadata.name,
    );
    expect(names).toHaveLength(11);
    for (let i = 0; i < 12; i++) {
      expect(names.includes(`dummyrun-metric-abc123-${i}`)).toBe(i >= 2);
    }
    expect(names).toContain("otheruid.dummymetric.1");
    expect(calls.find((c) => c.verb === "list")).toEqual({
      verb: "list",
      group: "batch",
      resource: "jobs",
      namespace: RUN.namespace,
    });
  });

  it("says why when the Jobs cannot be listed", async () => {
    const gone = await closedServer();
    const message = await new JobMetricProvider(clientOf(gone)).garbageCollect(RUN, 10);
    expect(message).toContain(`GET ${gone}/apis/batch/v1/namespaces/dummynamespace/jobs`);
  });
});

describe("the job provider as the analysis calls it (defaultProviders)", () => {
  const metric = {
    name: "smoke",
    provider: { job: { spec: METRIC.spec } },
  } as unknown as Parameters<JobMetrics["measure"]>[0];
  const at = new Date("2026-12-01T12:00:00Z");

  it("creates the run's Job in the target's namespace, named after the run uid and the measurement's number", async () => {
    const providers = defaultProviders({ clock });
    const target = {
      type: "kubernetes",
      server: kube.url,
      auth: { type: "token", token: "local" },
      namespace: "dummynamespace",
      stableDeployment: "a",
      canaryDeployment: "b",
    };
    const answer = await providers.measure(metric, {
      now: at,
      run: { id: "shop-v2.step01", measurement: 3 },
      target,
    });
    const name = `${runUid("shop-v2.step01")}.smoke.3`;
    expect(answer).toEqual({ ok: "running", metadata: { [JOB_NAME_KEY]: name }, resumeAfterSeconds: 10 });
    expect(runUid("shop-v2.step01")).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    );
    const ended = await providers.terminate(
      metric,
      { metadata: { [JOB_NAME_KEY]: name }, startedAt: at },
      { now: at, run: { id: "shop-v2.step01", measurement: 3 }, target },
    );
    expect(ended).toMatchObject({ ok: true, phase: "Successful" });
  });

  it("refuses a target other than kubernetes, naming it", async () => {
    const jobs = new JobMetrics(() => {
      throw new Error("no cluster is reached");
    });
    await expect(
      jobs.measure(metric, { now: at, run: { id: "r", measurement: 1 }, target: { type: "lambda-alias" } }),
    ).rejects.toThrow(
      'metric "smoke": a Job runs in the cluster of the kubernetes target only (this rollout\'s target is lambda-alias)',
    );
  });
});
