import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "@sfn-rollouts/test-support/cli";
import { type DynaliteHarness, startDynalite } from "@sfn-rollouts/test-support/dynalite";
import { digest, type FakeRollout, startStableRollout } from "@sfn-rollouts/test-support/fake-rollout";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { DynamoRolloutStore } from "../../functions/store/dynamodb.ts";
import { StoredAnalysisSchema } from "../../functions/workflow/analysis.ts";

/**
 * `rollouts replay` end to end: a real rollout of the compiled workflow in the embedded runtime
 * (two analysis steps of `success-rate >= 0.95`, two measurements each), its item, runs and
 * measurements written to a dynalite table as the shipped store writes them, and the CLI reading
 * that table through the environment as a user's CLI does.
 */

const TABLE_NAME = "rollouts-replay";
const NAME = "checkout";
let dynalite: DynaliteHarness;
let rollout: FakeRollout;
let dir: string;

const template = (condition: string, name = "success-rate") => `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: success-rate
spec:
  metrics:
    - name: ${name}
      interval: 3s
      count: 2
      successCondition: "${condition}"
      provider:
        web:
          url: http://127.0.0.1:1/unused
`;

async function file(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "replay-"));
  rollout = await startStableRollout({ scripts: { "success-rate": [0.99, 0.97, 0.96, 0.98] } });
  expect(await rollout.rollOut({ digest: digest(2), tag: "v2" })).toEqual({ state: "Healthy" });
  dynalite = await startDynalite(TABLE_NAME);
  const table = new DynamoRolloutStore({ client: dynalite.client(), tableName: TABLE_NAME });
  const { version: _v, updatedAt: _u, ...item } = await rollout.item();
  await table.save(item, null);
  for (const r of await rollout.store.listRuns(NAME, StoredAnalysisSchema)) {
    await table.saveRun(NAME, r.runId, r.run, null);
    for (const m of await rollout.store.listMeasurements(NAME, r.runId, z.unknown())) {
      await table.putMeasurement({
        rollout: NAME,
        runId: r.runId,
        measurementId: m.measurementId,
        value: m.value,
        at: m.at,
        ttlSeconds: 365 * 24 * 3600,
      });
    }
  }
  vi.stubEnv("AWS_ENDPOINT_URL_DYNAMODB", dynalite.endpoint);
  vi.stubEnv("ROLLOUTS_TABLE", TABLE_NAME);
  vi.stubEnv("AWS_REGION", "us-east-1");
  vi.stubEnv("AWS_ACCESS_KEY_ID", "local");
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "local");
});

afterAll(async () => {
  await rollout?.close();
  await dynalite?.close();
  vi.unstubAllEnvs();
});

describe("rollouts replay", () => {
  it("replays every recorded measurement with the run's own conditions: nothing differs, exit 0", async () => {
    const { code, out, err } = await run("replay", NAME);
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(out).toMatch(/run checkout-\S+\.step01 \(success-rate\)/);
    expect(out).toMatch(/success-rate #1 \S+ = \[0\.99\]: Successful → Successful/);
    expect(out.trim().split("\n").at(-1)).toBe("0 of 4 decisions differ");
  });

  it("with a stricter template shows the decisions that change and the first of them, exit 1", async () => {
    const stricter = await file("stricter.yaml", template("result[0] >= 0.975"));
    const { code, out } = await run("replay", NAME, "--template", stricter);
    expect(code).toBe(1);
    expect(out).toMatch(/success-rate #2 \S+ = \[0\.97\]: Successful → Failed {2}\*/);
    expect(out.trim().split("\n").at(-1)).toMatch(
      /^2 of 4 decisions differ; first at success-rate #2 \(\S+\): Successful → Failed$/,
    );
  });

  it("--analysis picks one run and --json prints rows and summary", async () => {
    const stricter = await file("stricter2.yaml", template("result[0] >= 0.975"));
    const { code, out } = await run("replay", NAME, "--analysis", "step04", "--template", stricter, "--json");
    expect(code).toBe(1);
    const parsed = JSON.parse(out) as {
      runs: Array<{ runId: string; rows: Array<{ value: string; recorded: string; replayed: string }> }>;
      summary: { differ: number; measurements: number };
    };
    expect(parsed.runs.map((r) => r.runId.split(".").at(-1))).toEqual(["step04"]);
    expect(parsed.runs[0]?.rows.map((r) => [r.value, r.recorded, r.replayed])).toEqual([
      ["[0.96]", "Successful", "Failed"],
      ["[0.98]", "Successful", "Successful"],
    ]);
    expect(parsed.summary).toMatchObject({ differ: 1, measurements: 2 });
  });

  it("refuses a template whose metric the runs never measured, an unknown run and an unknown rollout: exit 2", async () => {
    const typo = await file("typo.yaml", template("result[0] >= 0.9", "sucess-rate"));
    const one = await run("replay", NAME, "--analysis", "step01", "--template", typo);
    expect(one.code).toBe(2);
    expect(one.err).toMatch(/"sucess-rate" are not in the recorded run/);
    const none = await run("replay", NAME, "--analysis", "step09");
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/no analysis run named "step09"/);
    const missing = await run("replay", "nope");
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/rollout "nope" not found in table "rollouts-replay"/);
  });
});
