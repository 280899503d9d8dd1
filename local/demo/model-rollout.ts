import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Example, makeDataset, predict, type Weights } from "./model.ts";

/**
 * The model rollout the demo and the integration scenarios run: the reference's plan (a shadow,
 * then a sticky canary at 25% and 50%), each analysis decided by a statistical judge reading the
 * model router's `/compare` through the `samples` provider:
 * - `shadow-agreement`: a one-proportion test of the shadow's disagreement with the primary against
 *   a limit (a candidate that disagrees too often is rolled back before any user sees it);
 * - `feedback-vs-stable`: a two-proportion test of the candidate's bad-feedback rate against the
 *   stable version's, over the same window (worse beyond `minEffect` at `alpha`: rolled back).
 */

/**
 * The demo's model versions: the champion, a retrain as accurate as the champion, a model whose
 * accuracy is worse. v2's weights are v1's boundary learned again at another scale: it agrees with
 * v1 on 99.8% of the seeded stream and is as accurate within noise, so the rollout it passes is a
 * release a user would want, not a worse model waved through by a generous minimum effect.
 */
export const MODEL_VERSIONS: ReadonlyArray<{ version: string; weights: Weights; story: string }> = [
  { version: "v1", weights: [1.5, -2.0, 0.25], story: "the champion" },
  {
    version: "v2",
    weights: [1.6, -2.15, 0.25],
    story: "a retrain on newer data: agrees 99.8%, as accurate as v1 within noise",
  },
  {
    version: "v3",
    weights: [1.5, -2.0, 1.0],
    story: "a shifted intercept: agrees 90%, but about 9 points less accurate",
  },
];

export interface ModelSpecOptions {
  /**
   * The model router's address, which serves `/compare`: the local proxy's admin URL, or
   * `{{rollout.modelRouter}}` (the rollout's router function's Function URL).
   */
  router: string;
  /** The judges sign their reads of `/compare` with SigV4 (an `AWS_IAM` Function URL on this machine). */
  sigv4?: boolean;
  /** Samples each look compares, a duration; default 120s (longer than an analysis, so no sample ages out of it). */
  window?: string;
  initialDelay?: string;
  interval?: string;
  count?: number;
  /** Samples per side at which the fixed-horizon tests decide. */
  samples?: number;
}

/** Writes the rollout and its two judge templates to a temporary directory for `addRollout`. */
export function writeModelSpec(options: ModelSpecOptions): string[] {
  const dir = mkdtempSync(join(tmpdir(), "sfn-rollouts-model-"));
  const provider = `samples: {address: "${options.router}", primary: stable, candidate: canary, window: "${options.window ?? "120s"}"${options.sigv4 ? ", sigv4: {}" : ""}}`;
  const rollout = `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: model
spec:
  replicas: 2
  template:
    spec:
      containers: [{name: model, image: model}]
  strategy:
    canary:
      steps:
        - setMirrorRoute: {name: shadow, percentage: 100}
        - analysis: {templates: [{templateName: shadow-agreement}]}
        - setMirrorRoute: {name: shadow}
        - setWeight: 25
        - analysis: {templates: [{templateName: feedback-vs-stable}]}
        - setWeight: 50
        - analysis: {templates: [{templateName: feedback-vs-stable}]}
`;
  const timing = `      initialDelay: ${options.initialDelay ?? "4s"}
      interval: ${options.interval ?? "2s"}
      count: ${options.count ?? 30}`;
  const shadow = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: shadow-agreement
spec:
  metrics:
    - name: disagreement
${timing}
      provider:
        plugin:
          sfn-rollouts/judge:
            test: one-proportion
            label: disagreements
            limit: 0.15
            alpha: 0.01
            minSamples: 100
            samples: ${options.samples ?? 300}
            candidate:
              ${provider}
              bad: result.candidate.shadow.compared - result.candidate.shadow.agreement
              n: result.candidate.shadow.compared
`;
  const feedback = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: feedback-vs-stable
spec:
  metrics:
    - name: quality
${timing}
      provider:
        plugin:
          sfn-rollouts/judge:
            test: two-proportion
            label: bad feedback
            alpha: 0.01
            minEffect: 0.05
            minSamples: 100
            samples: ${options.samples ?? 300}
            candidate:
              ${provider}
              bad: result.candidate.feedback_bad
              n: result.candidate.feedback
            stable:
              ${provider}
              bad: result.primary.feedback_bad
              n: result.primary.feedback
`;
  const files = [join(dir, "rollout.yaml"), join(dir, "shadow.yaml"), join(dir, "feedback.yaml")];
  writeFileSync(files[0] as string, rollout);
  writeFileSync(files[1] as string, shadow);
  writeFileSync(files[2] as string, feedback);
  return files;
}

/** What the users did: answers by version, and the feedback each version got. */
export interface UserCounts {
  requests: number;
  failed: number;
  byVersion: Record<string, { served: number; good: number; bad: number; users: Set<string> }>;
}

/**
 * Users of the model: each request predicts one example of the seeded stream for one of `users`
 * users (`u0`…) and, once answered, sends feedback to the router for the request id it got back:
 * good when the answer was the example's true label (a delayed label, here immediate).
 */
export class ModelUsers {
  readonly counts: UserCounts = { requests: 0, failed: 0, byVersion: {} };
  readonly #examples: Example[];
  #next = 0;

  readonly #url: string;

  /** `url` is the router's address (a trailing slash, as a Function URL has, is fine); `send` sends each request. */
  constructor(
    url: string,
    private readonly users = 400,
    seed = 11,
    private readonly send: typeof fetch = fetch,
  ) {
    this.#url = url.replace(/\/+$/, "");
    this.#examples = makeDataset(seed, 5000);
  }

  /** One request and its feedback. */
  async one(): Promise<void> {
    const i = this.#next++;
    const example = this.#examples[i % this.#examples.length] as Example;
    const user = `u${i % this.users}`;
    this.counts.requests++;
    try {
      const res = await this.send(`${this.#url}/predict`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-user-id": user },
        body: JSON.stringify({ features: example.features }),
      });
      const body = (await res.json()) as { label?: number };
      const version = res.headers.get("x-model-version") ?? "?";
      const requestId = res.headers.get("x-request-id");
      if (res.status >= 500 || requestId === null) {
        this.counts.failed++;
        return;
      }
      const good = body.label === example.label;
      const v = this.counts.byVersion[version] ?? { served: 0, good: 0, bad: 0, users: new Set<string>() };
      this.counts.byVersion[version] = v;
      v.served++;
      v.users.add(user);
      if (good) v.good++;
      else v.bad++;
      const fb = await this.send(`${this.#url}/feedback`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ request_id: requestId, good }),
      });
      await fb.body?.cancel();
    } catch {
      this.counts.failed++;
    }
  }

  /** `n` requests at once. */
  async batch(n: number): Promise<void> {
    await Promise.all(Array.from({ length: n }, () => this.one()));
  }
}

/** The share of `examples` each model answers correctly (for the demo's table). */
export function accuracyOf(weights: Weights, examples: readonly Example[]): number {
  return examples.filter((e) => predict(weights, e.features) === e.label).length / examples.length;
}
