import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { ManualClock } from "../../../functions/clock.ts";
import {
  ConcurrentUpdateError,
  ItemTooLargeError,
  itemBytes,
  MAX_ITEM_BYTES,
  newRolloutItem,
  type RolloutStore,
  StoredItemInvalidError,
  update,
  upsert,
} from "../../../functions/store/index.ts";

const T0 = Date.UTC(2026, 0, 1);
let tableSeq = 0;

export interface StoreFixture {
  clock: ManualClock;
  /** Two stores on one table: two Lambdas racing. */
  a: RolloutStore;
  b: RolloutStore;
}

const RunSchema = z.object({ phase: z.string(), count: z.number() });

/**
 * The same behaviour is required of every adapter of the store: these tests run against the
 * in-memory store and dynalite (`store-contract.test.ts`) and against moto's DynamoDB
 * (`test/aws/dynamodb-store.test.ts`), where conditional-write conflicts are real
 * `ConditionalCheckFailedException`s. `make` gives two stores on one table: two Lambdas racing.
 */
export function storeContract(_label: string, make: () => StoreFixture): void {
  describe(`RolloutStore contract: ${_label}`, () => {
    // Rollout names are unique per test so tests sharing the dynalite table never collide.
    const unique = (base: string) => `${base}-${_label}-${++tableSeq}`;

    it("creates an item at version 1, reads it back validated, and lists it", async () => {
      const { a, clock } = make();
      const name = unique("checkout");
      const created = await a.save(newRolloutItem(name, clock.now()), null);
      expect(created.version).toBe(1);
      expect(created.updatedAt).toBe(T0);
      const read = await a.get(name);
      expect(read).toEqual(created);
      expect(read?.phase).toBe("Healthy");
      expect((await a.list()).map((item) => item.name)).toContain(name);
    });

    it("returns undefined for an unknown rollout", async () => {
      const { a } = make();
      expect(await a.get(unique("nope"))).toBeUndefined();
    });

    it("refuses a second create and a write at a stale version with ConcurrentUpdateError", async () => {
      const { a, b, clock } = make();
      const name = unique("race");
      await a.save(newRolloutItem(name, clock.now()), null);
      await expect(b.save(newRolloutItem(name, clock.now()), null)).rejects.toBeInstanceOf(
        ConcurrentUpdateError,
      );

      // Both read version 1; the first write wins, the second is refused.
      const seenByA = (await a.get(name))!;
      const seenByB = (await b.get(name))!;
      await a.save({ ...seenByA, message: "from a" }, seenByA.version);
      const lost = b.save({ ...seenByB, message: "from b" }, seenByB.version);
      await expect(lost).rejects.toMatchObject({ name: "ConcurrentUpdateError", expectedVersion: 1 });
      const final = await a.get(name);
      expect(final?.message).toBe("from a");
      expect(final?.version).toBe(2);
    });

    it("applies concurrent read-modify-writes without losing any (bounded retry)", async () => {
      const { a, b, clock } = make();
      const name = unique("counter");
      await a.save(newRolloutItem(name, clock.now()), null);
      const writers = Array.from({ length: 5 }, (_, i) =>
        update(i % 2 === 0 ? a : b, name, "latest", (current) => ({
          ...current,
          events: [...current.events, { at: clock.now(), type: "Test", message: `writer ${i}` }],
        })),
      );
      await Promise.all(writers);
      const final = (await a.get(name))!;
      expect(final.version).toBe(6);
      expect(final.events.map((e) => e.message).sort()).toEqual([0, 1, 2, 3, 4].map((i) => `writer ${i}`));
    });

    it("a strict expected version is not retried", async () => {
      const { a, clock } = make();
      const name = unique("strict");
      const v1 = await a.save(newRolloutItem(name, clock.now()), null);
      await update(a, name, v1.version, (current) => ({ ...current, weight: 25 }));
      await expect(
        update(a, name, v1.version, (current) => ({ ...current, weight: 50 })),
      ).rejects.toBeInstanceOf(ConcurrentUpdateError);
      expect((await a.get(name))?.weight).toBe(25);
    });

    it("upsert creates when absent and only one of two concurrent creators wins the create", async () => {
      const { a, b, clock } = make();
      const name = unique("upsert");
      const results = await Promise.all(
        [a, b].map((store, i) =>
          upsert(store, name, (current) =>
            current === undefined
              ? { ...newRolloutItem(name, clock.now()), message: `created by ${i}` }
              : { ...current, message: `${current.message}, then ${i}` },
          ),
        ),
      );
      const final = (await a.get(name))!;
      expect(final.version).toBe(2);
      expect(results.map((r) => r?.version).sort()).toEqual([1, 2]);
      expect(final.message).toMatch(/^created by [01], then [01]$/);
    });

    it("refuses to write an invalid item, naming the field, and writes nothing", async () => {
      const { a, clock } = make();
      const name = unique("invalid");
      const error = await a
        .save({ ...newRolloutItem(name, clock.now()), weight: 120 }, null)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoredItemInvalidError);
      expect((error as Error).message).toContain("weight");
      expect(await a.get(name)).toBeUndefined();
    });

    it("stores targetState as opaque JSON", async () => {
      const { a, clock } = make();
      const name = unique("target");
      const item = {
        ...newRolloutItem(name, clock.now()),
        targetState: { rules: ["arn:1"], ratio: Number.NaN },
      };
      await a.save(item, null);
      expect((await a.get(name))?.targetState).toEqual({ rules: ["arn:1"], ratio: null });
    });

    it("converts numbers the same way anywhere in the item: a pending event's NaN and out-of-range figures", async () => {
      const { a, clock } = make();
      const name = unique("pending");
      const detail = { message: "judged", bayesFactor: 1e300, pValue: 1.6e-300, ratio: Number.NaN };
      const item = {
        ...newRolloutItem(name, clock.now()),
        effects: {
          executionArn: "arn:aws:states:us-east-1:123456789012:execution:sm:e1",
          done: [],
          pending: [{ kind: "publish" as const, id: "step-01/AnalysisRunFailed", event: { detail } }],
        },
      };
      const saved = await a.save(item, null);
      const stored = { message: "judged", bayesFactor: 9.99999999999999e125, pValue: 0, ratio: null };
      expect(saved.effects.pending).toEqual([{ ...item.effects.pending[0], event: { detail: stored } }]);
      expect((await a.get(name))?.effects).toEqual(saved.effects);
    });

    it("stores analysis runs with their own optimistic version, validated by the caller's schema", async () => {
      const { a, b } = make();
      const rollout = unique("runs");
      const created = await a.saveRun(rollout, "run-2", { phase: "Running", count: 0 }, null);
      expect(created.version).toBe(1);
      await a.saveRun(rollout, "run-1", { phase: "Successful", count: 3 }, null);
      await expect(b.saveRun(rollout, "run-2", { phase: "Running", count: 0 }, null)).rejects.toBeInstanceOf(
        ConcurrentUpdateError,
      );
      const updated = await a.saveRun(rollout, "run-2", { phase: "Running", count: 1 }, 1);
      expect(updated).toMatchObject({ version: 2, createdAt: created.createdAt, run: { count: 1 } });
      await expect(b.saveRun(rollout, "run-2", { phase: "Failed", count: 9 }, 1)).rejects.toBeInstanceOf(
        ConcurrentUpdateError,
      );
      const run = await a.getRun(rollout, "run-2", RunSchema);
      expect(run?.run).toEqual({ phase: "Running", count: 1 });
      expect((await a.listRuns(rollout, RunSchema)).map((r) => r.runId)).toEqual(["run-1", "run-2"]);
      await expect(a.getRun(rollout, "run-2", z.object({ phase: z.number() }))).rejects.toBeInstanceOf(
        StoredItemInvalidError,
      );
      expect(await a.getRun(rollout, "missing", RunSchema)).toBeUndefined();
    });

    it("stores a run holding numbers beyond 2^53 (a judge's Bayes factor on a severe regression)", async () => {
      const { a } = make();
      const rollout = unique("huge");
      const run = {
        phase: "Failed",
        count: 1,
        judge: { bayesFactor: 5.600552460129207e96, pValue: 1.6e-300 },
      };
      await a.saveRun(rollout, "run-1", run, null);
      // DynamoDB numbers span 1e-130 to 1e126: beyond, they saturate (a p-value of 1e-300 is 0).
      expect((await a.getRun(rollout, "run-1", z.unknown()))?.run).toEqual({
        ...run,
        judge: { bayesFactor: 5.600552460129207e96, pValue: 0 },
      });
      const item = { ...newRolloutItem(rollout, T0), targetState: { big: 2 ** 60 } };
      await a.save(item, null);
      expect((await a.get(rollout))?.targetState).toEqual({ big: 2 ** 60 });
      await a.putMeasurement({
        rollout,
        runId: "run-1",
        at: T0,
        ttlSeconds: 3600,
        measurementId: "m#000001",
        value: { f: 1e300 },
      });
      expect((await a.listMeasurements(rollout, "run-1", z.unknown())).map((m) => m.value)).toEqual([
        { f: 9.99999999999999e125 },
      ]);
    });

    it("records a measurement once, sets its TTL and hides it after expiry", async () => {
      const { a, clock } = make();
      const rollout = unique("meas");
      const at = clock.now();
      const input = { rollout, runId: "r1", at, ttlSeconds: 3600 };
      expect(await a.putMeasurement({ ...input, measurementId: "latency#000001", value: { v: 1 } })).toBe(
        true,
      );
      expect(await a.putMeasurement({ ...input, measurementId: "latency#000001", value: { v: 99 } })).toBe(
        false,
      );
      expect(await a.putMeasurement({ ...input, measurementId: "latency#000000", value: { v: 0 } })).toBe(
        true,
      );
      await a.saveRun(rollout, "r1", { phase: "Running", count: 2 }, null);

      const schema = z.object({ v: z.number() });
      const listed = await a.listMeasurements(rollout, "r1", schema);
      expect(listed.map((m) => [m.measurementId, m.value.v])).toEqual([
        ["latency#000000", 0],
        ["latency#000001", 1],
      ]);
      expect(listed[0]?.expiresAt).toBe(Math.floor(at / 1000) + 3600);
      // Measurements are not runs.
      expect((await a.listRuns(rollout, RunSchema)).map((r) => r.runId)).toEqual(["r1"]);
      clock.advance(3600 * 1000);
      expect(await a.listMeasurements(rollout, "r1", schema)).toEqual([]);
    });

    it("refuses a run past DynamoDB's 400 KB item limit at the byte DynamoDB does, as ItemTooLarge", async () => {
      const { a, clock } = make();
      const rollout = unique("size");
      // The item as the adapters write it: keys, bookkeeping and the run, counted as DynamoDB counts.
      const sizeWith = (pad: string) =>
        itemBytes({
          pk: `ROLLOUT#${rollout}`,
          sk: "RUN#big",
          run: { phase: "Running", count: 0, pad },
          version: 1,
          updatedAt: clock.now(),
          createdAt: clock.now(),
          rollout,
          runId: "big",
        });
      const fits = "x".repeat(MAX_ITEM_BYTES - sizeWith(""));
      expect(sizeWith(fits)).toBe(MAX_ITEM_BYTES);
      await expect(
        a.saveRun(rollout, "big", { phase: "Running", count: 0, pad: `${fits}x` }, null),
      ).rejects.toBeInstanceOf(ItemTooLargeError);
      await expect(
        a.saveRun(rollout, "big", { phase: "Running", count: 0, pad: `${fits}x` }, null),
      ).rejects.toMatchObject({ name: "ItemTooLarge" });
      // Exactly at the limit is accepted: the same count as DynamoDB's, not an approximation.
      const saved = await a.saveRun(rollout, "big", { phase: "Running", count: 0, pad: fits }, null);
      expect(saved.version).toBe(1);
      // Multi-byte text counts its UTF-8 bytes, as DynamoDB counts it: 3 bytes for "€" (dynalite
      // counts UTF-16 code units, one here, so it is checked on the in-memory store only).
      if (_label === "memory") {
        await expect(
          a.saveRun(rollout, "big", { phase: "Running", count: 0, pad: `${fits.slice(2)}€` }, 1),
        ).rejects.toBeInstanceOf(ItemTooLargeError);
      }
      await expect(
        a.putMeasurement({
          rollout,
          runId: "big",
          measurementId: "m#000001",
          value: { pad: `${fits}${"x".repeat(1000)}` },
          at: clock.now(),
          ttlSeconds: 60,
        }),
      ).rejects.toBeInstanceOf(ItemTooLargeError);
    });

    it("gives runs a TTL, hides expired ones from listings, and lists one execution's runs by prefix", async () => {
      const { a, clock } = make();
      const rollout = unique("ttl");
      const nowSeconds = Math.floor(clock.now() / 1000);
      await a.saveRun(rollout, "exec-1.step01", { phase: "Successful", count: 1 }, null, {
        expiresAt: nowSeconds + 60,
      });
      await a.saveRun(rollout, "exec-2.step01", { phase: "Running", count: 1 }, null, {
        expiresAt: nowSeconds + 3600,
      });
      await a.saveRun(rollout, "exec-2.background", { phase: "Running", count: 1 }, null, {
        expiresAt: nowSeconds + 3600,
      });
      expect((await a.getRun(rollout, "exec-1.step01", RunSchema))?.expiresAt).toBe(nowSeconds + 60);
      expect((await a.listRuns(rollout, RunSchema, { prefix: "exec-2." })).map((r) => r.runId)).toEqual([
        "exec-2.background",
        "exec-2.step01",
      ]);
      // A later write moves the TTL on.
      const updated = await a.saveRun(rollout, "exec-2.step01", { phase: "Running", count: 2 }, 1, {
        expiresAt: nowSeconds + 7200,
      });
      expect(updated.expiresAt).toBe(nowSeconds + 7200);
      clock.advance(61_000);
      expect((await a.listRuns(rollout, RunSchema)).map((r) => r.runId)).toEqual([
        "exec-2.background",
        "exec-2.step01",
      ]);
    });

    it("reads only the newest measurements of one metric when asked", async () => {
      const { a, clock } = make();
      const rollout = unique("newest");
      const put = (measurementId: string, v: number, ttlSeconds = 3600) =>
        a.putMeasurement({ rollout, runId: "r1", measurementId, value: { v }, at: clock.now(), ttlSeconds });
      for (let i = 1; i <= 7; i++) await put(`rate#${String(i).padStart(6, "0")}`, i);
      await put("rate#000008", 8, 1);
      await put("rate#b#000001", 100);
      await put("zeta#000001", 200);
      clock.advance(2000);
      const schema = z.object({ v: z.number() });
      const newest = await a.listMeasurements(rollout, "r1", schema, {
        prefix: "rate#",
        last: 3,
        match: (id) => /^rate#\d+$/.test(id),
      });
      // The expired rate#000008 and the other metrics' measurements are skipped.
      expect(newest.map((m) => m.value.v)).toEqual([5, 6, 7]);
      expect((await a.listMeasurements(rollout, "r1", schema, { last: 2 })).map((m) => m.value.v)).toEqual([
        100, 200,
      ]);
    });
  });
}
