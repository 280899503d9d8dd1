import { type EmbeddedRollout, startEmbeddedRollout } from "@sfn-rollouts/test-support/embedded-rollout";
import { digest } from "@sfn-rollouts/test-support/fake-rollout";
import { COUNTS_SIDES, judgeTemplate, rates, statsWeb } from "@sfn-rollouts/test-support/judge-stats";
import { judgedRollout } from "@sfn-rollouts/test-support/judged-rollout";
import { FakeTraffic } from "@sfn-rollouts/test-support/traffic";
import { afterEach, describe, expect, it } from "vitest";
import { MetricProviders } from "../../functions/metrics/index.ts";
import { StoredAnalysisSchema } from "../../functions/workflow/analysis.ts";
import { parseRollout } from "../../statemachine/index.ts";

/**
 * One error budget per rollout, through the compiled workflow in the embedded runtime: a
 * sequential gate in the 25% and the 50% step is one test, its evidence carried from the first
 * analysis to the second by the shipped handlers (start-analysis reads the earlier run).
 */

let rollout: EmbeddedRollout | undefined;
afterEach(async () => {
  await rollout?.close();
  rollout = undefined;
});

/** Two analysis steps of one sequential-rate gate: a look every 10 s for 100 s each. */
function twoSteps(budget?: string) {
  const text = judgedRollout({ weights: [25, 50] });
  return parseRollout([
    {
      file: "rollout.yaml",
      text: budget
        ? text.replace(
            "metadata: {name: shop}",
            `metadata: {name: shop, annotations: {rollouts.sfn/error-budget: "${budget}"}}`,
          )
        : text,
    },
    {
      file: "gate.yaml",
      text: judgeTemplate(
        "initialDelay: 10s\ninterval: 10s\ncount: 10",
        `test: sequential-rate\nlabel: errors\n${COUNTS_SIDES}`,
      ),
    },
  ]).spec;
}

describe("a sequential gate's evidence carries from one analysis step to the next", () => {
  it("rolls back in the second analysis a 2% vs 1% regression that neither analysis alone would", async () => {
    const spec = twoSteps();
    rollout = await startEmbeddedRollout({
      spec,
      router: new FakeTraffic(),
      providers: new MetricProviders({ web: statsWeb(rates(0.02, 0.01)) }),
    });
    expect(await rollout.rollOut({ digest: digest(1), tag: "v1" })).toEqual({ state: "Healthy" });
    const ending = await rollout.rollOut({ digest: digest(2), tag: "v2" });
    expect(ending.state).toBe("Aborted");
    const runs = await rollout.store.listRuns(spec.name, StoredAnalysisSchema);
    const [first, second] = runs.map((r) => r.run.run).sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    // The 25% step alone: a Bayes factor of 5.08 after 1,000 candidate requests (scipy), under the
    // 1/0.05 it needs: promoted.
    expect(first?.phase).toBe("Successful");
    const last = first?.metricResults[0]?.judge;
    expect(last?.last?.bayesFactor).toBeCloseTo(5.08, 2);
    expect(last?.evidence).toMatchObject({ analyses: 1, n: { candidate: 1000, stable: 3000 } });
    // The 50% step starts from it (the run's own spec carries it) and crosses 20 at its ninth look:
    // 5.077 × its own Bayes factor gives 4.727, 5.266, …, 16.559, 20.617 (scipy).
    expect(second?.metrics[0]?.provider.judge).toMatchObject({ carried: { analyses: 1 } });
    expect(second?.phase).toBe("Failed");
    expect(second?.metricResults[0]?.count).toBe(9);
    expect(second?.metricResults[0]?.measurements[0]?.judge?.bayesFactor).toBeCloseTo(4.727, 3);
    const item = await rollout.item();
    expect(item.phase).toBe("Degraded");
    expect(item.message).toMatch(
      /Gate "errors" rolled back: candidate 2\.0% vs stable 1\.0% errors in this analysis, p = 0\.0485 < alpha 0\.05 \(sequential-rate, Bayes factor 20\.62 over 2 analyses, n = 1900\/5700; alpha 0\.05 is the whole of the rollout's error budget 0\.05\)/,
    );
  });

  it("holds the same regression to the rollout's smaller budget: promoted through both steps", async () => {
    const spec = twoSteps("0.02");
    rollout = await startEmbeddedRollout({
      spec,
      router: new FakeTraffic(),
      providers: new MetricProviders({ web: statsWeb(rates(0.02, 0.01)) }),
    });
    expect(await rollout.rollOut({ digest: digest(1), tag: "v1" })).toEqual({ state: "Healthy" });
    expect(await rollout.rollOut({ digest: digest(2), tag: "v2" })).toEqual({ state: "Healthy" });
    const runs = await rollout.store.listRuns(spec.name, StoredAnalysisSchema);
    const second = runs.map((r) => r.run.run).sort((a, b) => a.startedAt.localeCompare(b.startedAt))[1];
    // Evidence of 25.776 over both steps (scipy) is short of 1/0.02 = 50.
    expect(second?.metricResults[0]?.judge?.evidence?.analyses).toBe(2);
    expect(second?.metricResults[0]?.judge?.last?.bayesFactor).toBeCloseTo(25.776, 3);
    expect(second?.metricResults[0]?.judge?.last?.reason).toMatch(
      /alpha 0\.02 is the whole of the rollout's error budget 0\.02/,
    );
  });
});
