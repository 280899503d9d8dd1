import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "@sfn-rollouts/test-support/cli";
import { type DynaliteHarness, startDynalite } from "@sfn-rollouts/test-support/dynalite";
import { type EmbeddedRollout, startEmbeddedRollout } from "@sfn-rollouts/test-support/embedded-rollout";
import { digest } from "@sfn-rollouts/test-support/fake-rollout";
import {
  COUNTS_SIDES,
  judgeMetric,
  judgeTemplate,
  rates,
  statsWeb,
} from "@sfn-rollouts/test-support/judge-stats";
import { canarySpec } from "@sfn-rollouts/test-support/rollout-spec";
import { FakeTraffic } from "@sfn-rollouts/test-support/traffic";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { StoredMeasurementValueSchema } from "../../cli/render.ts";
import { MetricProviders } from "../../functions/metrics/index.ts";
import type { MetricProvider } from "../../functions/metrics/port.ts";
import { DynamoRolloutStore } from "../../functions/store/dynamodb.ts";
import { StoredAnalysisSchema } from "../../functions/workflow/analysis.ts";

/**
 * `rollouts replay` of a judge, end to end: a real rollout of the compiled workflow in the
 * embedded runtime whose analysis step is a two-proportion judge (candidate 3% vs stable 1%
 * errors, a look every 10 s, deciding at 500 requests per side: it rolls back at its fifth look),
 * its runs and measurements copied to a dynalite table as the shipped store writes them, and the
 * CLI replaying them with the run's judge and with changed ones.
 */

const TABLE_NAME = "rollouts-replay-judge";
const NAME = "checkout";
const FIELDS = "initialDelay: 10s\ninterval: 10s\ncount: 20";
const JUDGE = `test: two-proportion\nlabel: errors\n${COUNTS_SIDES}`;
let dynalite: DynaliteHarness;
let rollout: EmbeddedRollout;
/** A second rollout, `latency`, judged by Mann-Whitney on 400 raw latencies per side and look. */
let latency: EmbeddedRollout;
const SAMPLES_JUDGE = `test: mann-whitney\ndata: samples\nminSamples: 100\ncandidate: {web: {url: "http://samples/v2"}}\nstable: {web: {url: "http://samples/v1"}}`;
/** 400 latencies per side, the candidate's 20 ms slower. */
const samples: MetricProvider = {
  async measure(metric) {
    const v2 = (metric.provider.web?.url ?? "").includes("v2");
    const values = Array.from({ length: 400 }, (_, i) => (v2 ? 120 : 100) + (i % 37) / 7);
    return { ok: true, result: values, value: "" };
  },
};

/** The rollout's item, runs and measurements into the table, as the shipped store writes them. */
async function copy(from: EmbeddedRollout, table: DynamoRolloutStore): Promise<void> {
  const { version: _v, updatedAt: _u, ...item } = await from.item();
  await table.save(item, null);
  for (const r of await from.store.listRuns(from.name, StoredAnalysisSchema)) {
    await table.saveRun(from.name, r.runId, r.run, null);
    for (const m of await from.store.listMeasurements(from.name, r.runId, z.unknown())) {
      await table.putMeasurement({
        rollout: from.name,
        runId: r.runId,
        measurementId: m.measurementId,
        value: m.value,
        at: m.at,
        ttlSeconds: 365 * 24 * 3600,
      });
    }
  }
}
let dir: string;

async function file(name: string, judge: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, judgeTemplate(FIELDS, judge));
  return path;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "replay-judge-"));
  rollout = await startEmbeddedRollout({
    spec: canarySpec([
      { kind: "setWeight", weight: 25 },
      {
        kind: "analysis",
        origin: "step",
        analysis: {
          templates: [{ name: "gate", kind: "AnalysisTemplate", metrics: [judgeMetric(FIELDS, JUDGE)] }],
          args: {},
        },
      },
    ]),
    router: new FakeTraffic(),
    providers: new MetricProviders({ web: statsWeb(rates(0.03, 0.01)) }),
  });
  expect(await rollout.rollOut({ digest: digest(1), tag: "v1" })).toEqual({ state: "Healthy" });
  await rollout.rollOut({ digest: digest(2), tag: "v2" });
  expect((await rollout.item()).phase).toBe("Degraded");
  latency = await startEmbeddedRollout({
    spec: canarySpec(
      [
        { kind: "setWeight", weight: 25 },
        {
          kind: "analysis",
          origin: "step",
          analysis: {
            templates: [
              {
                name: "gate",
                kind: "AnalysisTemplate",
                metrics: [judgeMetric("interval: 10s\ncount: 2", SAMPLES_JUDGE)],
              },
            ],
            args: {},
          },
        },
      ],
      { name: "latency" },
    ),
    router: new FakeTraffic(),
    providers: new MetricProviders({ web: samples }),
  });
  expect(await latency.rollOut({ digest: digest(1), tag: "v1" })).toEqual({ state: "Healthy" });
  await latency.rollOut({ digest: digest(2), tag: "v2" });
  expect((await latency.item()).phase).toBe("Degraded");
  dynalite = await startDynalite(TABLE_NAME);
  const table = new DynamoRolloutStore({ client: dynalite.client(), tableName: TABLE_NAME });
  await copy(rollout, table);
  await copy(latency, table);
  vi.stubEnv("AWS_ENDPOINT_URL_DYNAMODB", dynalite.endpoint);
  vi.stubEnv("ROLLOUTS_TABLE", TABLE_NAME);
  vi.stubEnv("AWS_REGION", "us-east-1");
  vi.stubEnv("AWS_ACCESS_KEY_ID", "local");
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "local");
});

afterAll(async () => {
  await rollout?.close();
  await latency?.close();
  await dynalite?.close();
  vi.unstubAllEnvs();
});

describe("rollouts replay of a judge", () => {
  it("with the run's own judge re-decides every look the same: exit 0", async () => {
    const { code, out, err } = await run("replay", NAME);
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(out).toMatch(/run checkout-\S+\.step01 \(gate\)/);
    expect(out).toMatch(
      /errors #1 \S+ = n=100\/300 of 500: Running → Running {2}\[INSUFFICIENT → INSUFFICIENT\]/,
    );
    // scipy.stats.chi2_contingency([[15, 485], [15, 1485]], correction=False): p = norm.sf(sqrt(chi2)) = 7.2e-04.
    expect(out).toMatch(
      /errors #5 \S+ = 0\.03 vs 0\.01 p=7\.2e-04 n=500\/1500: Failed → Failed {2}\[FAIL p=7\.2e-04 → FAIL p=7\.2e-04\]/,
    );
    expect(out.trim().split("\n").at(-1)).toBe("0 of 5 decisions differ");
  });

  it("with the same judge given as a template: nothing differs", async () => {
    const same = await file("same.yaml", JUDGE);
    const { code, out } = await run("replay", NAME, "--template", same);
    expect(code).toBe(0);
    expect(out.trim().split("\n").at(-1)).toBe("0 of 5 decisions differ");
  });

  it("with a much smaller alpha the look that rolled back passes: exit 1", async () => {
    const strict = await file("strict.yaml", `${JUDGE}\nalpha: 0.0005`);
    const { code, out } = await run("replay", NAME, "--template", strict);
    expect(code).toBe(1);
    expect(out).toMatch(
      /errors #5 \S+ = [^:]+: Failed → Successful {2}\* {2}\[FAIL p=7\.2e-04 → PASS p=7\.2e-04\]/,
    );
    expect(out.trim().split("\n").at(-1)).toMatch(
      /^1 of 5 decisions differ; first at errors #5 \(\S+\): Failed → Successful$/,
    );
  });

  it("under a smaller rollout budget (--error-budget) the gate's share shrinks with it: the rollback passes", async () => {
    // The run's own judge, the rollout's only gate: its share is the whole budget, 0.05 → 0.0005.
    const { code, out } = await run("replay", NAME, "--error-budget", "0.0005", "--json");
    expect(code).toBe(1);
    const parsed = JSON.parse(out) as {
      runs: Array<{ rows: Array<{ recorded: string; replayed: string; note?: string }> }>;
    };
    const last = parsed.runs[0]?.rows.at(-1);
    expect(last).toMatchObject({ recorded: "Failed", replayed: "Successful" });
    expect(last?.note).toMatch(
      /p = 7\.2e-04 >= alpha 0\.0005 \(two-proportion, n = 500\/1500; alpha 0\.0005 is the whole of the rollout's error budget 0\.0005\)$/,
    );
    // A template's own alpha stays its own under the asked budget, counted against it.
    const own = await file("own.yaml", `${JUDGE}\nalpha: 0.01`);
    const kept = await run("replay", NAME, "--template", own, "--error-budget", "0.02", "--json");
    expect(JSON.parse(kept.out).runs[0].rows.at(-1).note).toMatch(
      /alpha 0\.01 is the metric's own, counted against the rollout's error budget 0\.02\)$/,
    );
    const bad = await run("replay", NAME, "--error-budget", "5%");
    expect(bad.code).toBe(2);
    expect(bad.err).toBe(
      'rollouts: --error-budget is a probability strictly between 0 and 1 (0.05), not "5%"\n',
    );
  });

  it("with a smaller horizon it decides two looks sooner, and --json carries the figures", async () => {
    const sooner = await file("sooner.yaml", `${JUDGE}\nminSamples: 300\nsamples: 300`);
    const { code, out } = await run("replay", NAME, "--template", sooner, "--json");
    expect(code).toBe(1);
    const parsed = JSON.parse(out) as {
      runs: Array<{
        rows: Array<{
          index: number;
          recorded: string;
          replayed: string;
          judge: { replayed: { pValue: number | null } };
        }>;
      }>;
      summary: { differ: number; replayed: number; firstChange: { index: number } };
    };
    const rows = parsed.runs[0]?.rows ?? [];
    expect(rows.map((r) => [r.recorded, r.replayed])).toEqual([
      ["Running", "Running"],
      ["Running", "Running"],
      ["Running", "Failed"],
      ["Running", "Failed"],
      ["Failed", "Failed"],
    ]);
    // scipy.stats.chi2_contingency([[9, 291], [9, 891]], correction=False): p = norm.sf(sqrt(chi2)).
    expect(rows[2]?.judge.replayed.pValue).toBeCloseTo(0.006792183631355694, 12);
    expect(parsed.summary).toMatchObject({ differ: 2, replayed: 5, firstChange: { index: 3 } });
  });
});

describe("rollouts replay of a judge on raw samples", () => {
  it("the run keeps its looks small; each look's own item keeps the samples, and replay decides them again", async () => {
    const [stored] = await latency.store.listRuns("latency", StoredAnalysisSchema);
    const kept = stored?.run.run.metricResults[0]?.measurements[0];
    // 800 latencies do not fit the run's 4 KB look: the run says they were cut...
    expect(kept?.readings).toBeUndefined();
    expect(kept?.truncated?.readings).toBeGreaterThan(2048);
    // ...and the look's own item has them.
    const [own] = await latency.store.listMeasurements(
      "latency",
      stored?.runId ?? "",
      StoredMeasurementValueSchema,
    );
    expect(own?.value.truncated?.readings).toBeUndefined();
    expect(own?.value.readings).toMatchObject({ ok: true, values: { "candidate.value": { ok: true } } });
    const { code, out, err } = await run("replay", "latency");
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(out).toMatch(/errors #1 \S+ = [^:]+: Failed → Failed {2}\[FAIL p=\S+ → FAIL p=\S+\]/);
    expect(out.trim().split("\n").at(-1)).toBe("0 of 1 decisions differ");
  });
});
