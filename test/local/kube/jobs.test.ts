import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../functions/clock.ts";
import { type KubeApi, startKubeApi } from "../../../local/kube/server.ts";
import { type Answer, kubeCall } from "./client.ts";

/** batch/v1 Jobs on the local Kubernetes API: served, validated, ended by the controller. */

let kube: KubeApi;
let clock: ManualClock;

beforeEach(async () => {
  clock = new ManualClock(Date.parse("2026-01-01T00:00:00Z"));
  kube = await startKubeApi({ clock, syncIntervalMs: 0, namespaces: ["default", "shop"], jobRunMs: 3000 });
});
afterEach(async () => {
  await kube.close();
});

const JOBS = "/apis/batch/v1/namespaces/shop/jobs";

function call(method: string, path: string, body?: unknown): Promise<Answer> {
  return kubeCall(kube, method, path, body);
}

function job(name: string, command: string[], restartPolicy: string | null = "Never") {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name },
    spec: {
      backoffLimit: 0,
      template: {
        spec: {
          containers: [{ name: "check", image: "busybox:1.36", command }],
          ...(restartPolicy === null ? {} : { restartPolicy }),
        },
      },
    },
  };
}

describe("discovery", () => {
  it("lists jobs in batch/v1 with every verb and a status subresource", async () => {
    const list = await call("GET", "/apis/batch/v1");
    expect(list.status).toBe(200);
    const names = (list.body.resources as Array<{ name: string; verbs: string[] }>).map((r) => r.name);
    expect(names).toEqual(["jobs", "jobs/status"]);
    expect(list.body.resources[0].verbs).toEqual([
      "create",
      "delete",
      "get",
      "list",
      "patch",
      "update",
      "watch",
    ]);
    const groups = await call("GET", "/apis");
    expect((groups.body.groups as Array<{ name: string }>).map((g) => g.name)).toContain("batch");
  });
});

describe("the Job controller", () => {
  it("runs a Job for the run time, then completes it when its command exits 0", async () => {
    await call("POST", JOBS, job("passes", ["sh", "-c", "exit 0"]));
    clock.advance(2999);
    const running = await call("GET", `${JOBS}/passes`);
    expect(running.body.status).toEqual({
      startTime: "2026-01-01T00:00:00Z",
      active: 1,
      ready: 0,
      terminating: 0,
      uncountedTerminatedPods: {},
    });
    clock.advance(1);
    const done = await call("GET", `${JOBS}/passes`);
    expect(done.body.status.succeeded).toBe(1);
    expect(done.body.status.completionTime).toBe("2026-01-01T00:00:03Z");
    expect(
      done.body.status.conditions.map((c: { type: string; status: string }) => [c.type, c.status]),
    ).toEqual([
      ["SuccessCriteriaMet", "True"],
      ["Complete", "True"],
    ]);
    expect(done.body.status.conditions[1].reason).toBe("CompletionsReached");
  });

  it("fails a Job whose command exits non-zero (the last exit said decides)", async () => {
    await call("POST", JOBS, job("fails", ["sh", "-c", "exit 0; exit 3"]));
    await call("POST", JOBS, job("args", ["sh"]));
    // `args` count too: a command in args is read as one line with the command.
    await call("PUT", `${JOBS}/args`, {
      ...job("args", ["sh"]),
      metadata: { name: "args" },
      spec: {
        template: {
          spec: {
            restartPolicy: "Never",
            containers: [{ name: "c", image: "i", command: ["sh"], args: ["-c", "exit 2"] }],
          },
        },
      },
    });
    clock.advance(3000);
    for (const name of ["fails", "args"]) {
      const failed = await call("GET", `${JOBS}/${name}`);
      expect(failed.body.status.failed).toBe(1);
      expect(failed.body.status.completionTime).toBeUndefined();
      expect(failed.body.status.conditions.map((c: { type: string }) => c.type)).toEqual([
        "FailureTarget",
        "Failed",
      ]);
      expect(failed.body.status.conditions[1]).toMatchObject({
        status: "True",
        reason: "BackoffLimitExceeded",
        message: "Job has reached the specified backoff limit",
      });
    }
  });

  it("writes a Job's status once: an ended Job keeps its resourceVersion", async () => {
    await call("POST", JOBS, job("once", ["true"]));
    clock.advance(5000);
    const first = await call("GET", `${JOBS}/once`);
    clock.advance(60_000);
    const later = await call("GET", `${JOBS}/once`);
    expect(later.body.metadata.resourceVersion).toBe(first.body.metadata.resourceVersion);
    expect(later.body.status.conditions[1].type).toBe("Complete");
  });

  it("lists Jobs by label and deletes them", async () => {
    await call("POST", JOBS, { ...job("a", ["true"]), metadata: { name: "a", labels: { run: "1" } } });
    await call("POST", JOBS, { ...job("b", ["true"]), metadata: { name: "b", labels: { run: "2" } } });
    const listed = await call("GET", `${JOBS}?labelSelector=run%3D1`);
    expect((listed.body.items as Array<{ metadata: { name: string } }>).map((j) => j.metadata.name)).toEqual([
      "a",
    ]);
    expect((await call("DELETE", `${JOBS}/a`, { propagationPolicy: "Foreground" })).status).toBe(200);
    expect((await call("GET", `${JOBS}/a`)).status).toBe(404);
  });
});

describe("kubectl's table", () => {
  it("prints a Job's status, completions and duration as kubectl get jobs does", async () => {
    await call("POST", JOBS, job("passes", ["true"]));
    await call("POST", JOBS, job("fails", ["sh", "-c", "exit 1"]));
    clock.advance(2000);
    await call("POST", JOBS, job("runs", ["true"]));
    clock.advance(1000);
    const response = await fetch(`${kube.url}${JOBS}`, {
      headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json" },
    });
    const table = (await response.json()) as {
      columnDefinitions: Array<{ name: string }>;
      rows: Array<{ cells: unknown[] }>;
    };
    expect(table.columnDefinitions.map((c) => c.name)).toEqual([
      "Name",
      "Status",
      "Completions",
      "Duration",
      "Age",
    ]);
    // Listed by name, as the API server lists them.
    expect(table.rows.map((r) => r.cells)).toEqual([
      ["fails", "Failed", "0/1", "", "3s"],
      ["passes", "Complete", "1/1", "3s", "3s"],
      ["runs", "Running", "0/1", "1s", "1s"],
    ]);
  });
});

describe("validation", () => {
  it("refuses a Job whose pods would not end, or without containers, naming the field", async () => {
    const always = await call("POST", JOBS, job("always", ["true"], "Always"));
    expect(always.status).toBe(422);
    expect(always.body.details.causes).toEqual([
      {
        reason: "FieldValueInvalid",
        message: 'Unsupported value: "Always": supported values: "OnFailure", "Never"',
        field: "spec.template.spec.restartPolicy",
      },
    ]);
    const none = await call("POST", JOBS, job("none", ["true"], null));
    expect(none.body.details.causes[0]).toMatchObject({
      field: "spec.template.spec.restartPolicy",
      message: 'Required value: valid values: "OnFailure", "Never"',
    });
    const empty = await call("POST", JOBS, {
      ...job("empty", []),
      spec: { template: { spec: { restartPolicy: "Never" } } },
    });
    expect(empty.status).toBe(422);
    expect(empty.body.details.causes[0].field).toBe("spec.template.spec.containers");
  });

  it("refuses a Job name longer than a label value (63), as the Job controller labels pods with it", async () => {
    const name = `${"a".repeat(36)}.${"m".repeat(30)}.1`;
    const long = await call("POST", JOBS, job(name, ["true"]));
    expect(long.status).toBe(422);
    expect(long.body.details.causes[0]).toMatchObject({
      field: "spec.template.labels",
      message: `Invalid value: "${name}": must be no more than 63 characters`,
    });
    expect((await call("POST", JOBS, job("a".repeat(63), ["true"]))).status).toBe(201);
  });
});
