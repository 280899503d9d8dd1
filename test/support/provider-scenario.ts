import type { MetricProvider } from "../../functions/metrics/port.ts";
import { type StoredAnalysis, StoredAnalysisSchema } from "../../functions/workflow/analysis.ts";
import { parseRollout } from "../../statemachine/index.ts";
import { startEmbeddedRollout } from "./embedded-rollout.ts";
import { digest } from "./fake-rollout.ts";
import { argoAnalysisRollout } from "./rollout-spec.ts";
import { FakeTraffic } from "./traffic.ts";

/** What a provider scenario saw: each push's end state, the rollout's last message, the runs. */
export interface ProviderVerdicts {
  /** v1 (the first version, nothing to analyse), v2, v3: `Healthy` / `Aborted`. */
  states: string[];
  message: string | undefined;
  /** The analysis runs, oldest first (v2's, then v3's). */
  runs: Array<StoredAnalysis["run"]>;
}

/**
 * A provider deciding a rollout on the embedded runtime: the Argo Rollout of
 * `argoAnalysisRollout(templateName)` with `template` (an AnalysisTemplate of that name), the
 * compiled workflow and the shipped handlers with `providers`; v1, v2 and v3 pushed in turn (each
 * version's tag is `args.version`).
 */
export async function decideThreePushes(options: {
  templateName: string;
  template: string;
  providers: MetricProvider;
}): Promise<ProviderVerdicts> {
  const { spec } = parseRollout([
    { file: "rollout.yaml", text: argoAnalysisRollout(options.templateName) },
    { file: "template.yaml", text: options.template },
  ]);
  const rollout = await startEmbeddedRollout({
    spec,
    router: new FakeTraffic(),
    providers: options.providers,
  });
  try {
    const states: string[] = [];
    for (const n of [1, 2, 3])
      states.push((await rollout.rollOut({ digest: digest(n), tag: `v${n}` })).state);
    const runs = (await rollout.store.listRuns(spec.name, StoredAnalysisSchema))
      .map((r) => r.run.run)
      .sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    return { states, message: (await rollout.item()).message, runs };
  } finally {
    await rollout.close();
  }
}
