import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Where the demo's analysis reads a version's success rate: a Prometheus scraping the proxy
 * (the reference canary's PromQL), or the proxy's own samples through the web provider when no Prometheus
 * binary is installed. Either way the metric is `success-rate` with `result[0] >= 0.95`, so the
 * verdicts and Argo's messages are the same.
 */
export type DemoMetrics =
  | { kind: "prometheus"; url: string }
  /** `url`: the proxy's admin listener (`RunningProxy.adminUrl`), which serves `/admin/stats`. */
  | { kind: "proxy"; url: string };

/**
 * The demo's statistical gate, `errors-vs-stable`: a sequential test of the candidate's error rate
 * against the stable version's, at the 50% step, over the time since its analysis started. It
 * rolls back what no threshold sees (1% → 3% errors passes `result[0] >= 0.95`) and promotes at
 * `samples` requests per side without evidence of harm.
 */
export interface DemoJudge {
  /** Where it reads (default: where `success-rate` reads). */
  metrics?: DemoMetrics;
  initialDelay?: string;
  interval?: string;
  count?: number;
  minSamples?: number;
  samples?: number;
}

function judgeTemplate(metrics: DemoMetrics, judge: DemoJudge): string {
  const side = (label: "latest" | "stable") => {
    const version = `{{rollout.${label}}}`;
    if (metrics.kind === "prometheus") {
      const query = (filter: string) =>
        `sum(increase(http_requests_total{version="${version}"${filter}}[{{judge.elapsed}}]))`;
      return `              bad: {prometheus: {address: "${metrics.url}", query: '${query(',code=~"5.."')}'}}
              n: {prometheus: {address: "${metrics.url}", query: '${query("")}'}}`;
    }
    return `              web: {url: "${metrics.url}/admin/stats?version=${version}&window={{judge.elapsedSeconds}}", jsonPath: "{$}"}
              bad: result.requests - result.ok
              n: result.requests`;
  };
  return `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: errors-vs-stable
spec:
  metrics:
    - name: errors
      initialDelay: ${judge.initialDelay ?? "4s"}
      interval: ${judge.interval ?? "2s"}
      count: ${judge.count ?? 10}
      provider:
        plugin:
          sfn-rollouts/judge:
            test: sequential-rate
            label: errors
            minSamples: ${judge.minSamples ?? 300}
            samples: ${judge.samples ?? 1000}
            candidate:
${side("latest")}
            stable:
${side("stable")}
`;
}

/**
 * The reference canary (4 replicas; 25%, analysis, 50%, a 2 s pause, analysis) and its
 * `success-rate` template, written to a temporary directory for `addRollout`. The version under
 * analysis is Argo's `valueFrom: {podTemplateHashValue: Latest}`: the pushed image's tag.
 */
export function writeDemoSpec(
  metrics: DemoMetrics,
  options: {
    name?: string;
    pause?: string;
    count?: number;
    /** The success-rate measurements' timing (default 5s and 3s). */
    initialDelay?: string;
    interval?: string;
    judge?: DemoJudge;
    /** A background analysis of the success rate from step 1, with these conditions. */
    background?: { successCondition: string; failureCondition: string };
    /** The Rollout's annotations (alarms, hooks: `rollouts.sfn/…`). */
    annotations?: Record<string, string>;
  } = {},
): string[] {
  const dir = mkdtempSync(join(tmpdir(), "sfn-rollouts-demo-"));
  const rollout = `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: ${options.name ?? "demo"}
${
  options.annotations
    ? `  annotations:\n${Object.entries(options.annotations)
        .map(([k, v]) => `    ${JSON.stringify(k)}: ${JSON.stringify(v)}\n`)
        .join("")}`
    : ""
}spec:
  replicas: 4
  template:
    spec:
      containers: [{name: app, image: demo}]
  strategy:
    canary:
${
  options.background
    ? `      analysis:
        startingStep: 1
        templates: [{templateName: background}]
        args: [{name: version, valueFrom: {podTemplateHashValue: Latest}}]
`
    : ""
}      steps:
        - setWeight: 25
        - analysis:
            templates: [{templateName: success-rate}]
            args: [{name: version, valueFrom: {podTemplateHashValue: Latest}}]
        - setWeight: 50
        - pause: ${options.pause ?? "{duration: 2s}"}
        - analysis:
            templates: [{templateName: success-rate}${options.judge ? ", {templateName: errors-vs-stable}" : ""}]
            args: [{name: version, valueFrom: {podTemplateHashValue: Latest}}]
`;
  const provider =
    metrics.kind === "prometheus"
      ? `        prometheus:
          address: ${metrics.url}
          query: |
            sum(rate(http_requests_total{version="{{args.version}}",code=~"2.."}[20s]))
            / sum(rate(http_requests_total{version="{{args.version}}"}[20s]))`
      : `        web:
          url: "${metrics.url}/admin/stats?version={{args.version}}&window=20"
          jsonPath: "{$.result}"`;
  const template = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: success-rate
spec:
  args:
    - name: version
  metrics:
    - name: success-rate
      interval: ${options.interval ?? "3s"}
      count: ${options.count ?? 2}
      initialDelay: ${options.initialDelay ?? "5s"}
      failureLimit: 0
      successCondition: result[0] >= 0.95
      provider:
${provider}
`;
  const files = [join(dir, "rollout.yaml"), join(dir, "analysis.yaml")];
  writeFileSync(files[0] as string, rollout);
  writeFileSync(files[1] as string, template);
  if (options.background) {
    const background = join(dir, "background.yaml");
    writeFileSync(
      background,
      template
        .replace("name: success-rate\nspec:", "name: background\nspec:")
        .replace(/ {6}count: \d+\n/, "")
        .replace(
          / {6}successCondition: .*\n/,
          `      successCondition: ${options.background.successCondition}\n      failureCondition: ${options.background.failureCondition}\n`,
        ),
    );
    files.push(background);
  }
  if (options.judge) {
    const judge = join(dir, "judge.yaml");
    writeFileSync(judge, judgeTemplate(options.judge.metrics ?? metrics, options.judge));
    files.push(judge);
  }
  return files;
}
