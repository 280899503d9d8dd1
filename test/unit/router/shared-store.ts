import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { describe, expect, it } from "vitest";
import type { Backend } from "../../../functions/router/config.ts";
import { DynamoRouterConfig } from "../../../functions/router/dynamodb-config.ts";
import { DynamoObservations } from "../../../functions/router/dynamodb-observations.ts";
import { type Observations, Recorder, type Sample } from "../../../functions/router/recorder.ts";
import { type CallBackend, ModelRouter, type RouterRequest } from "../../../functions/router/router.ts";
import { SharedModelRouter } from "../../../functions/router/shared.ts";

const v1: Backend = { name: "v1", url: "http://v1.test" };
const v2: Backend = { name: "v2", url: "http://v2.test" };

/** v1 answers x mod 2, v2 disagrees on every third x. */
const call: CallBackend = async (backend, request) => {
  const { x } = JSON.parse(request.body) as { x: number };
  const label = backend.name === "v1" ? x % 2 : x % 3 === 0 ? 1 - (x % 2) : x % 2;
  return { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ label }) };
};

const post = (x: number, requestId: string): RouterRequest => ({
  method: "POST",
  url: "/predict",
  headers: { "content-type": "application/json", "x-request-id": requestId },
  body: JSON.stringify({ user: `u${x}`, x }),
});

const COMPARE = "/compare?primary=primary&candidate=candidate&window=60";

/** A DynamoDB table with the controller's keys, and clients for it (a new one per call). */
export interface SharedTable {
  client(): DynamoDBClient;
  readonly tableName: string;
}

/**
 * The model router's shared store (its configuration and observations in the controller's table)
 * against one DynamoDB: dynalite in `shared-store.test.ts`, moto's in `test/aws/router-store.test.ts`.
 * `table` is read when a test runs (the table is made in `beforeAll`).
 */
export function sharedStoreContract(label: string, table: () => SharedTable): void {
  const db: SharedTable = {
    client: () => table().client(),
    get tableName() {
      return table().tableName;
    },
  };
  describe(`the model router's shared store: ${label}`, () => {
    it("two environments sharing one table route alike and give the same /compare", async () => {
      const clock = { now: 1_800_000_000_000 };
      const now = () => clock.now;
      const target = new DynamoRouterConfig({
        client: db.client(),
        tableName: db.tableName,
        router: "shared",
      });
      await target.write({ primary: v1, candidate: v2, weight: 30, mirrorPercent: 100, salt: "s" });
      const a = new SharedModelRouter({
        client: db.client(),
        tableName: db.tableName,
        router: "shared",
        call,
        now,
      });
      const b = new SharedModelRouter({
        client: db.client(),
        tableName: db.tableName,
        router: "shared",
        call,
        now,
      });
      const versions = new Map<string, string>();
      for (let x = 0; x < 40; x++) {
        clock.now += 10;
        const answer = await (x % 2 === 0 ? a : b).handle(post(x, `r${x}`));
        expect(answer.status).toBe(200);
        versions.set(`r${x}`, answer.headers["x-model-version"] as string);
      }
      await Promise.all([a.router.idle(), b.router.idle()]);
      // Feedback through the environment that did not answer.
      for (let x = 0; x < 40; x += 4) {
        const other = x % 2 === 0 ? b : a;
        const fb = await other.handle({
          method: "POST",
          url: "/feedback",
          headers: {},
          body: JSON.stringify({ request_id: `r${x}`, good: x % 8 === 0 }),
        });
        expect(fb.status).toBe(200);
        expect(JSON.parse(fb.body).version).toBe(versions.get(`r${x}`));
      }
      const second = await a.handle({
        method: "POST",
        url: "/feedback",
        headers: {},
        body: JSON.stringify({ request_id: "r4", good: true }),
      });
      expect(second.status).toBe(409);
      const unknown = await b.handle({
        method: "POST",
        url: "/feedback",
        headers: {},
        body: JSON.stringify({ request_id: "nobody", good: true }),
      });
      expect(unknown.status).toBe(404);
      expect(JSON.parse(unknown.body).error).toContain('"nobody"');

      const fromA = JSON.parse((await a.handle({ method: "GET", url: COMPARE, headers: {}, body: "" })).body);
      const fromB = JSON.parse((await b.handle({ method: "GET", url: COMPARE, headers: {}, body: "" })).body);
      // The mirror counters are each environment's; everything summarized is the table's.
      expect(fromA.primary).toEqual(fromB.primary);
      expect(fromA.candidate).toEqual(fromB.candidate);
      const onCandidate = [...versions.values()].filter((v) => v === "v2").length;
      expect(onCandidate).toBeGreaterThan(0);
      expect(fromA.primary.requests + fromA.candidate.requests).toBe(40);
      expect(fromA.candidate.requests).toBe(onCandidate);
      expect(fromA.candidate.shadow.requests).toBe(40 - onCandidate);
      expect(fromA.primary.feedback + fromA.candidate.feedback).toBe(10);
      expect(fromA.samples).toEqual({ read: 80 - onCandidate, limit: 20_000, truncated: false });
      expect(fromA.mirror.sent + fromB.mirror.sent).toBe(40 - onCandidate);
    });

    it("a new configuration reaches every environment once its cache expires", async () => {
      const clock = { now: 1_800_000_000_000 };
      const now = () => clock.now;
      const target = new DynamoRouterConfig({
        client: db.client(),
        tableName: db.tableName,
        router: "cache",
      });
      const router = new SharedModelRouter({
        client: db.client(),
        tableName: db.tableName,
        router: "cache",
        call,
        now,
        configCacheMs: 1000,
      });
      expect((await router.handle(post(1, "c0"))).status).toBe(503);
      await target.write({ primary: v1 });
      clock.now += 1000;
      expect((await router.handle(post(1, "c1"))).headers["x-model-version"]).toBe("v1");
      await target.write({ primary: v2 });
      clock.now += 500;
      expect((await router.handle(post(1, "c2"))).headers["x-model-version"]).toBe("v1");
      clock.now += 500;
      expect((await router.handle(post(1, "c3"))).headers["x-model-version"]).toBe("v2");
    });

    it("names the item and the field of a stored configuration that is not valid", async () => {
      const writer = new DynamoRouterConfig({ client: db.client(), tableName: db.tableName, router: "bad" });
      const { PutCommand, DynamoDBDocumentClient } = await import("@aws-sdk/lib-dynamodb");
      await DynamoDBDocumentClient.from(db.client()).send(
        new PutCommand({
          TableName: db.tableName,
          Item: { pk: "MODEL#bad", sk: "CONFIG", config: JSON.stringify({ primary: v1, weight: 150 }) },
        }),
      );
      await expect(writer.read()).rejects.toThrow(/MODEL#bad\/CONFIG: .*weight/);
    });

    it("the in-memory and DynamoDB recorders give the same /compare for the same events", async () => {
      const clock = { now: 1_800_000_000_000 };
      const now = () => clock.now;
      const memory = new Recorder({ now });
      const dynamo = new DynamoObservations({
        client: db.client(),
        tableName: db.tableName,
        router: "same",
        now,
      });
      const config = { primary: v1, candidate: v2, compare: { kind: "score" as const, path: "score" } };
      const routers = [memory, dynamo].map((observations) => new ModelRouter({ config, observations }));
      const stores: Observations[] = [memory, dynamo];
      const events: Sample[] = [];
      for (let i = 0; i < 60; i++) {
        const served = i % 3 !== 2;
        events.push({
          at: clock.now + i * 100 + 0.25,
          version: served ? (i % 5 === 0 ? "v2" : "v1") : "v2",
          role: served ? "served" : "shadow",
          latencyMs: 3 + ((i * 7.3) % 11),
          ok: i % 11 !== 0,
          requestId: `e${i}`,
          user: `u${i % 13}`,
          ...(served ? { prediction: i / 10 } : { agree: i % 4 !== 0, absDiff: i / 37, relDiff: i / 91 }),
        });
      }
      for (const store of stores) for (const e of events) await store.add({ ...e });
      clock.now += 6000;
      const outcomes = [];
      for (const router of routers) {
        const answers = [];
        for (const [id, body] of [
          ["e0", { good: true }],
          ["e1", { label: 0.1 }],
          ["e3", { good: false }],
          ["e0", { good: false }],
          ["e2", { good: true }],
          ["nobody", { good: true }],
        ] as const) {
          const answer = await router.feedback(JSON.stringify({ request_id: id, ...body }));
          answers.push([answer.status, JSON.parse(answer.body).version ?? null]);
        }
        outcomes.push(answers);
      }
      expect(outcomes[1]).toEqual(outcomes[0]);
      expect(outcomes[0]?.map(([status]) => status)).toEqual([200, 200, 200, 409, 404, 404]);
      const [fromMemory, fromDynamo] = await Promise.all(
        routers.map(async (r) => JSON.parse((await r.compare(COMPARE)).body)),
      );
      expect(fromDynamo.primary).toEqual(fromMemory.primary);
      expect(fromDynamo.candidate).toEqual(fromMemory.candidate);
      expect(fromMemory.candidate.shadow.compared).toBe(20);
      expect(fromMemory.primary.feedback).toBe(2);
      // A window that starts later sees fewer samples in both.
      const late = "/compare?primary=primary&candidate=candidate&window=3";
      const [lateMemory, lateDynamo] = await Promise.all(
        routers.map(async (r) => JSON.parse((await r.compare(late)).body)),
      );
      expect(lateDynamo.primary).toEqual(lateMemory.primary);
      expect(lateMemory.primary.requests).toBeLessThan(fromMemory.primary.requests);
    });

    it("forgets an answer past its retention: feedback for it is a 404 naming the retention", async () => {
      const clock = { now: 1_800_000_000_000 };
      const store = new DynamoObservations({
        client: db.client(),
        tableName: db.tableName,
        router: "expiry",
        retentionSeconds: 10,
        now: () => clock.now,
      });
      await store.add({
        at: clock.now,
        version: "v1",
        role: "served",
        latencyMs: 1,
        ok: true,
        requestId: "old",
        user: "u",
      });
      clock.now += 9_000;
      expect((await store.served("old"))?.version).toBe("v1");
      clock.now += 2_000;
      const outcome = await store.feedback("old", true);
      expect(outcome).toMatchObject({ ok: false, status: 404 });
      expect(outcome.ok ? "" : outcome.message).toContain("keeps answers for 10 s");
    });

    it("binds a request id to one answer across environments, until the answer is past its retention", async () => {
      const clock = { now: 1_800_000_000_000 };
      const options = {
        client: db.client(),
        tableName: db.tableName,
        router: "binding",
        retentionSeconds: 10,
        now: () => clock.now,
      };
      const [a, b] = [new DynamoObservations(options), new DynamoObservations(options)];
      const served = (version: string): Sample => ({
        at: clock.now,
        version,
        role: "served",
        latencyMs: 1,
        ok: true,
        requestId: "V",
        user: "u",
      });
      // Two environments answering one id at once: one binds it, the other is told it is taken.
      const bound = await Promise.all([a.add(served("v1")), b.add(served("v2"))]);
      expect(bound.filter(Boolean)).toHaveLength(1);
      const owner = bound[0] ? "v1" : "v2";
      expect(await b.has("V")).toBe(true);
      expect(await a.feedback("V", true)).toMatchObject({ ok: true, version: owner });
      expect(await b.add(served(owner === "v1" ? "v2" : "v1"))).toBe(false);
      expect(await b.feedback("V", false)).toMatchObject({ ok: false, status: 409 });
      expect((await a.window(60)).samples.filter((x) => x.role === "served")).toHaveLength(1);
      // Past its retention the answer is gone for the router: the id names the next answer.
      clock.now += 11_000;
      expect(await a.has("V")).toBe(false);
      expect(await a.add(served("v2"))).toBe(true);
      expect(await b.feedback("V", true)).toMatchObject({ ok: true, version: "v2" });
    });

    it("reads at most maxItems answers of a window, newest first, and says the window was cut", async () => {
      const clock = { now: 1_800_000_000_000 };
      const store = new DynamoObservations({
        client: db.client(),
        tableName: db.tableName,
        router: "cut",
        maxItems: 5,
        now: () => clock.now,
      });
      for (let i = 0; i < 8; i++) {
        await store.add({
          at: clock.now + i,
          version: "v1",
          role: "served",
          latencyMs: i,
          ok: true,
          requestId: `k${i}`,
          user: "u",
        });
      }
      clock.now += 100;
      const cut = await store.window(60);
      expect(cut.truncated).toBe(true);
      expect(cut.samples.map((s) => s.requestId)).toEqual(["k3", "k4", "k5", "k6", "k7"]);
      const router = new ModelRouter({ config: { primary: v1 }, observations: store });
      const body = JSON.parse((await router.compare(COMPARE)).body);
      expect(body.samples).toEqual({ read: 5, limit: 5, truncated: true });
      expect(body.primary.requests).toBe(5);
      const whole = new DynamoObservations({
        client: db.client(),
        tableName: db.tableName,
        router: "cut",
        maxItems: 8,
        now: () => clock.now,
      });
      expect((await whole.window(60)).truncated).toBe(false);
    });
  });
}
