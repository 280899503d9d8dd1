import { type DynaliteHarness, startDynalite } from "@sfn-rollouts/test-support/dynalite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadView } from "../../cli/commands/operate-actions.ts";
import { renderRollout } from "../../cli/render.ts";
import { createRun, tick } from "../../functions/analysis/run.ts";
import { ManualClock } from "../../functions/clock.ts";
import type { MetricProvider } from "../../functions/metrics/port.ts";
import { DynamoRolloutStore } from "../../functions/store/dynamodb.ts";
import { MemoryRolloutStore } from "../../functions/store/memory.ts";
import type { RolloutStore } from "../../functions/store/port.ts";
import { newRolloutItem } from "../../functions/store/schema.ts";
import type { StoredAnalysis } from "../../functions/workflow/analysis.ts";
import { MetricSchema } from "../../statemachine/spec.ts";

/**
 * What one frame of `rollouts get` (and so every refresh of `--watch`) reads: only what it shows.
 * The frame drawn from those reads must be the frame drawn from everything.
 */
const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);
const REPO = "123456789012.dkr.ecr.us-east-1.amazonaws.com/checkout";
const rev = (n: number) => ({
  revision: n,
  image: `${REPO}@sha256:${String(n).repeat(64)}`,
  digest: `sha256:${String(n).repeat(64)}`,
  tag: `v${n}`,
});
const arn = (gen: number) =>
  `arn:aws:states:us-east-1:123456789012:execution:checkout-rollout:checkout-${String(gen).repeat(24)}-g${gen}`;
const execName = (gen: number) => `checkout-${String(gen).repeat(24)}-g${gen}`;

let dynalite: DynaliteHarness;
beforeAll(async () => {
  dynalite = await startDynalite("rollouts-watch");
});
afterAll(async () => {
  await dynalite?.close();
});

/** A store that records every call and the JSON size of what each returned. */
function recording(store: RolloutStore) {
  const calls: Array<{ method: string; args: unknown[]; bytes: number }> = [];
  const proxy = new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        const out = await value.apply(target, args);
        calls.push({
          method: String(property),
          args,
          bytes: Buffer.byteLength(JSON.stringify(out ?? null)),
        });
        return out;
      };
    },
  });
  return { store: proxy, calls };
}

const provider: MetricProvider = {
  measure: async (metric) => ({ ok: true, result: [0.99], value: `[0.99] ${metric.name}` }),
};

function stored(
  gen: number,
  stepIndex: number,
  background: boolean,
  run: StoredAnalysis["run"],
): StoredAnalysis {
  return {
    run,
    context: {
      rollout: "checkout",
      revision: gen,
      image: rev(gen).image,
      digest: rev(gen).digest,
      tag: `v${gen}`,
      executionArn: arn(gen),
    },
    stepIndex,
    background,
    token: background ? null : "t".repeat(800),
    tick: 1,
    templates: ["rate"],
    answered: false,
  };
}

/** A rollout at its 4th revision: old executions' runs, a long background run, a full history. */
async function seed(store: RolloutStore, clock: ManualClock, name: string): Promise<void> {
  const item = newRolloutItem(name, T0);
  await store.save(
    {
      ...item,
      phase: "Progressing",
      stableRevision: rev(3),
      currentRevision: rev(4),
      stepIndex: 1,
      stepCount: 3,
      strategy: "canary",
      stepLabels: ["setWeight: 25", "analysis: rate", "pause"],
      weight: 25,
      executionArn: arn(4),
      history: Array.from({ length: 10 }, (_, i) => ({ ...rev(1), revision: i + 1, at: T0 })),
      rollbacks: Array.from({ length: 20 }, () => ({ digest: rev(2).digest, at: T0 })),
      targetState: { rules: "r".repeat(5000) },
      events: Array.from({ length: 50 }, (_, i) => ({
        at: T0 + i,
        type: "RolloutStepCompleted",
        message: `event ${i}`,
      })),
    },
    null,
  );
  const metrics = ["rate", "latency", "rate#b"].map((metricName) =>
    MetricSchema.parse({ name: metricName, interval: 30, provider: { web: { url: "http://m.internal/x" } } }),
  );
  const spec = { templates: [{ name: "rate", kind: "AnalysisTemplate" as const, metrics }] };
  let run = createRun(spec, new Date(T0));
  for (let i = 0; i < 60; i++) run = await tick(run, new Date(T0 + i * 30_000), provider);
  for (const gen of [2, 3, 4]) {
    await store.saveRun(name, `${execName(gen)}.step01`, stored(gen, 1, false, run), null);
    await store.saveRun(name, `${execName(gen)}.background`, stored(gen, 0, true, run), null);
  }
  for (const metric of ["rate", "latency"]) {
    for (let seq = 1; seq <= 60; seq++) {
      await store.putMeasurement({
        rollout: name,
        runId: `${execName(4)}.background`,
        measurementId: `${metric}#${String(seq).padStart(6, "0")}`,
        value: { metric, phase: "Successful", value: `[0.${seq}]`, startedAt: "s", finishedAt: "f" },
        at: clock.now(),
        ttlSeconds: 3600,
      });
    }
  }
  // A metric whose name extends another's ("rate#b"): its ids start with "rate#" too.
  await store.putMeasurement({
    rollout: name,
    runId: `${execName(4)}.background`,
    measurementId: "rate#b#000001",
    value: { metric: "rate#b", phase: "Failed", value: "[0]", startedAt: "s", finishedAt: "f" },
    at: clock.now(),
    ttlSeconds: 3600,
  });
}

describe.each([
  ["memory", (clock: ManualClock) => new MemoryRolloutStore({ clock })],
  [
    "dynalite",
    (clock: ManualClock) =>
      new DynamoRolloutStore({ client: dynalite.client(), tableName: "rollouts-watch", clock }),
  ],
] as const)("a rollouts get frame reads only what it shows (%s)", (label, make) => {
  it("reads no history, no other execution's runs and three measurements per metric; draws the same frame", async () => {
    const clock = new ManualClock(T0);
    const base = make(clock);
    const name = `checkout-${label}`;
    await seed(base, clock, name);
    const whole = recording(base);
    const narrow = recording(base);
    const all = await loadView({ store: whole.store }, name, { whole: true });
    const shown = await loadView({ store: narrow.store }, name);

    expect(renderRollout(shown)).toBe(renderRollout(all));
    // The item without what a frame does not show.
    const get = narrow.calls.find((c) => c.method === "get");
    expect((get?.args[1] as { fields?: string[] } | undefined)?.fields).not.toContain("history");
    expect(shown.item.history).toEqual([]);
    expect(shown.item.targetState).toBeNull();
    // The current execution's runs only.
    expect(shown.runs.map((r) => r.runId)).toEqual([`${execName(4)}.background`, `${execName(4)}.step01`]);
    expect(all.runs).toHaveLength(6);
    // The last three of each metric ("rate#"'s query skips "rate#b"'s), out of 121 stored.
    const measured = shown.measurements[`${execName(4)}.background`] ?? [];
    expect(measured.map((m) => m.measurementId)).toEqual([
      "rate#000058",
      "rate#000059",
      "rate#000060",
      "latency#000058",
      "latency#000059",
      "latency#000060",
      "rate#b#000001",
    ]);
    expect(all.measurements[`${execName(4)}.background`]).toHaveLength(121);
    const bytes = (calls: typeof whole.calls) => calls.reduce((sum, c) => sum + c.bytes, 0);
    expect(bytes(narrow.calls)).toBeLessThan(bytes(whole.calls) / 2);
  });
});
