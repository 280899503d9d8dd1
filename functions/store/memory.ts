import type { z } from "zod";
import { type Clock, systemClock } from "../clock.ts";
import { ConcurrentUpdateError } from "./errors.ts";
import {
  describeKey,
  measurementSk,
  measurementSkPrefix,
  rolloutPk,
  runSk,
  STATE_SK,
  toJson,
} from "./keys.ts";
import type { PutMeasurementInput, RolloutStore, StoredMeasurement, StoredRun } from "./port.ts";
import { type RolloutItem, type RolloutItemInput, RolloutItemSchema } from "./schema.ts";
import { parseWith } from "./validate.ts";

/**
 * The rollout store in a Map, with the same conditional-write semantics as DynamoDB (same
 * `ConcurrentUpdateError`, same JSON normalisation, same validation on read), for handler tests
 * and anything else that should not start dynalite.
 */
export class MemoryRolloutStore implements RolloutStore {
  readonly #items = new Map<string, Record<string, unknown>>();
  readonly #clock: Clock;
  /** Number of writes refused for a version mismatch (handy in tests). */
  conflicts = 0;

  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock ?? systemClock;
  }

  async get(name: string): Promise<RolloutItem | undefined> {
    const key = keyOf(rolloutPk(name), STATE_SK);
    const raw = this.#items.get(key);
    return raw === undefined ? undefined : parseWith(RolloutItemSchema, structuredClone(raw), key, "");
  }

  async save(item: RolloutItemInput, expectedVersion: number | null): Promise<RolloutItem> {
    const key = keyOf(rolloutPk(item.name), STATE_SK);
    this.#check(key, expectedVersion);
    const next = parseWith(
      RolloutItemSchema,
      toJson({
        ...item,
        version: expectedVersion === null ? 1 : expectedVersion + 1,
        updatedAt: this.#clock.now(),
      }),
      key,
      "",
    );
    this.#items.set(key, structuredClone(next));
    return next;
  }

  async list(): Promise<RolloutItem[]> {
    const out: RolloutItem[] = [];
    for (const [key, raw] of this.#items) {
      if (key.endsWith(`/${STATE_SK}`)) out.push(parseWith(RolloutItemSchema, structuredClone(raw), key, ""));
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }

  async getRun<T>(rollout: string, runId: string, schema: z.ZodType<T>): Promise<StoredRun<T> | undefined> {
    const key = keyOf(rolloutPk(rollout), runSk(runId));
    const raw = this.#items.get(key) as unknown as StoredRun | undefined;
    if (raw === undefined) return undefined;
    return { ...raw, run: parseWith(schema, structuredClone(raw.run), key, "run") };
  }

  async saveRun(
    rollout: string,
    runId: string,
    run: unknown,
    expectedVersion: number | null,
  ): Promise<StoredRun> {
    const key = keyOf(rolloutPk(rollout), runSk(runId));
    this.#check(key, expectedVersion);
    const now = this.#clock.now();
    const previous = this.#items.get(key) as unknown as StoredRun | undefined;
    const stored: StoredRun = {
      rollout,
      runId,
      run: toJson(run),
      version: expectedVersion === null ? 1 : expectedVersion + 1,
      createdAt: previous?.createdAt ?? now,
      updatedAt: now,
    };
    this.#items.set(key, structuredClone(stored) as unknown as Record<string, unknown>);
    return stored;
  }

  async listRuns<T>(rollout: string, schema: z.ZodType<T>): Promise<StoredRun<T>[]> {
    const prefix = keyOf(rolloutPk(rollout), runSk(""));
    const out: StoredRun<T>[] = [];
    for (const key of [...this.#items.keys()].filter((k) => k.startsWith(prefix)).sort()) {
      const raw = this.#items.get(key) as unknown as StoredRun;
      out.push({ ...raw, run: parseWith(schema, structuredClone(raw.run), key, "run") });
    }
    return out;
  }

  async putMeasurement(input: PutMeasurementInput): Promise<boolean> {
    const key = keyOf(rolloutPk(input.rollout), measurementSk(input.runId, input.measurementId));
    if (this.#items.has(key)) return false;
    const stored: StoredMeasurement = {
      rollout: input.rollout,
      runId: input.runId,
      measurementId: input.measurementId,
      value: toJson(input.value),
      at: input.at,
      expiresAt: Math.floor(input.at / 1000) + Math.max(0, Math.ceil(input.ttlSeconds)),
    };
    this.#items.set(key, stored as unknown as Record<string, unknown>);
    return true;
  }

  async listMeasurements<T>(
    rollout: string,
    runId: string,
    schema: z.ZodType<T>,
  ): Promise<StoredMeasurement<T>[]> {
    const prefix = keyOf(rolloutPk(rollout), measurementSkPrefix(runId));
    const nowSeconds = Math.floor(this.#clock.now() / 1000);
    const out: StoredMeasurement<T>[] = [];
    for (const key of [...this.#items.keys()].filter((k) => k.startsWith(prefix)).sort()) {
      const raw = this.#items.get(key) as unknown as StoredMeasurement;
      if (raw.expiresAt <= nowSeconds) continue;
      out.push({ ...raw, value: parseWith(schema, structuredClone(raw.value), key, "value") });
    }
    return out;
  }

  #check(key: string, expectedVersion: number | null): void {
    const current = this.#items.get(key);
    const ok = expectedVersion === null ? current === undefined : current?.version === expectedVersion;
    if (!ok) {
      this.conflicts += 1;
      throw new ConcurrentUpdateError(key, expectedVersion);
    }
  }
}

const keyOf = (pk: string, sk: string): string => describeKey(pk, sk);
