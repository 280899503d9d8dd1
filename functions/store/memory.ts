import type { z } from "zod";
import { type Clock, systemClock } from "../clock.ts";
import { ConcurrentUpdateError, ItemTooLargeError } from "./errors.ts";
import {
  describeKey,
  measurementSk,
  measurementSkPrefix,
  ROLLOUT_KIND,
  rolloutPk,
  runSk,
  STATE_SK,
  TABLE,
  toJson,
} from "./keys.ts";
import type {
  GetOptions,
  ListMeasurementsOptions,
  ListRunsOptions,
  PutMeasurementInput,
  RolloutStore,
  SaveRunOptions,
  StoredMeasurement,
  StoredRun,
} from "./port.ts";
import { type RolloutItem, type RolloutItemInput, RolloutItemSchema } from "./schema.ts";
import { itemBytes, MAX_ITEM_BYTES } from "./size.ts";
import { parseWith } from "./validate.ts";

/**
 * The rollout store in a Map, with the same conditional-write semantics as DynamoDB (same
 * `ConcurrentUpdateError`, same JSON normalisation, same validation on read) and the same 400 KB
 * item limit (`ItemTooLargeError`, the item's size counted as DynamoDB counts it, key and
 * bookkeeping attributes included), for handler tests and anything else that should not start
 * dynalite.
 */
export class MemoryRolloutStore implements RolloutStore {
  readonly #items = new Map<string, Record<string, unknown>>();
  readonly #clock: Clock;
  /** Number of writes refused for a version mismatch (handy in tests). */
  conflicts = 0;

  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock ?? systemClock;
  }

  async get(name: string, options: GetOptions = {}): Promise<RolloutItem | undefined> {
    const key = keyOf(rolloutPk(name), STATE_SK);
    const raw = this.#items.get(key);
    if (raw === undefined) return undefined;
    const fields = options.fields;
    const read = fields
      ? Object.fromEntries(fields.filter((f) => Object.hasOwn(raw, f)).map((f) => [f, raw[f]]))
      : raw;
    return parseWith(RolloutItemSchema, structuredClone(read), key, "");
  }

  async save(item: RolloutItemInput, expectedVersion: number | null): Promise<RolloutItem> {
    const pk = rolloutPk(item.name);
    const key = keyOf(pk, STATE_SK);
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
    checkSize(key, { ...next, kind: ROLLOUT_KIND, pk, sk: STATE_SK });
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
    options: SaveRunOptions = {},
  ): Promise<StoredRun> {
    const pk = rolloutPk(rollout);
    const key = keyOf(pk, runSk(runId));
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
      expiresAt: options.expiresAt ?? previous?.expiresAt ?? null,
    };
    const { expiresAt, ...attributes } = stored;
    checkSize(key, {
      ...attributes,
      ...(typeof expiresAt === "number" ? { [TABLE.ttlAttribute]: expiresAt } : {}),
      pk,
      sk: runSk(runId),
    });
    this.#items.set(key, structuredClone(stored) as unknown as Record<string, unknown>);
    return stored;
  }

  async listRuns<T>(
    rollout: string,
    schema: z.ZodType<T>,
    options: ListRunsOptions = {},
  ): Promise<StoredRun<T>[]> {
    const prefix = keyOf(rolloutPk(rollout), runSk(options.prefix ?? ""));
    const nowSeconds = Math.floor(this.#clock.now() / 1000);
    const out: StoredRun<T>[] = [];
    for (const key of [...this.#items.keys()].filter((k) => k.startsWith(prefix)).sort()) {
      const raw = this.#items.get(key) as unknown as StoredRun;
      if (typeof raw.expiresAt === "number" && raw.expiresAt <= nowSeconds) continue;
      out.push({ ...raw, run: parseWith(schema, structuredClone(raw.run), key, "run") });
    }
    return out;
  }

  async putMeasurement(input: PutMeasurementInput): Promise<boolean> {
    const pk = rolloutPk(input.rollout);
    const sk = measurementSk(input.runId, input.measurementId);
    const key = keyOf(pk, sk);
    if (this.#items.has(key)) return false;
    const stored: StoredMeasurement = {
      rollout: input.rollout,
      runId: input.runId,
      measurementId: input.measurementId,
      value: toJson(input.value),
      at: input.at,
      expiresAt: Math.floor(input.at / 1000) + Math.max(0, Math.ceil(input.ttlSeconds)),
    };
    checkSize(key, { ...stored, pk, sk });
    this.#items.set(key, stored as unknown as Record<string, unknown>);
    return true;
  }

  async listMeasurements<T>(
    rollout: string,
    runId: string,
    schema: z.ZodType<T>,
    options: ListMeasurementsOptions = {},
  ): Promise<StoredMeasurement<T>[]> {
    const prefix = keyOf(rolloutPk(rollout), measurementSkPrefix(runId));
    const nowSeconds = Math.floor(this.#clock.now() / 1000);
    let kept: StoredMeasurement[] = [];
    for (const key of [...this.#items.keys()]
      .filter((k) => k.startsWith(prefix + (options.prefix ?? "")))
      .sort()) {
      const raw = this.#items.get(key) as unknown as StoredMeasurement;
      if (raw.expiresAt <= nowSeconds) continue;
      if (options.match && !options.match(raw.measurementId)) continue;
      kept.push(raw);
    }
    if (options.last !== undefined) kept = kept.slice(-Math.max(0, options.last));
    return kept.map((raw) => ({
      ...raw,
      value: parseWith(
        schema,
        structuredClone(raw.value),
        keyOf(rolloutPk(rollout), measurementSk(runId, raw.measurementId)),
        "value",
      ),
    }));
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

/** Refuses, as DynamoDB does, an item larger than 400 KB. */
function checkSize(key: string, attributes: Record<string, unknown>): void {
  const bytes = itemBytes(attributes);
  if (bytes > MAX_ITEM_BYTES) throw new ItemTooLargeError(key, bytes);
}

const keyOf = (pk: string, sk: string): string => describeKey(pk, sk);
