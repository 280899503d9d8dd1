import { Token } from "aws-cdk-lib";
import * as logs from "aws-cdk-lib/aws-logs";
import { describeIssues, targetSettingsProblems } from "../functions/traffic/settings.ts";
import { applyErrorBudget } from "../statemachine/error-budget.ts";
import { RolloutsError } from "../statemachine/errors.ts";
import {
  formatProblem,
  type Problem,
  parseRollout,
  providersRead,
  type RolloutSpec,
  RolloutSpecSchema,
  readSourcesSync,
  stepAnalysis,
} from "../statemachine/index.ts";
import { kubernetesSettings } from "./kubernetes.ts";
import type { RolloutControllerProps, RolloutOptions, RolloutSpecSource, RolloutTarget } from "./props.ts";
import { tagPatternProblem } from "./tag-pattern.ts";

/**
 * Every bad prop at once: a `cdk synth` that stops at the first problem makes people fix a list
 * one run at a time. Each entry names the prop path.
 */
export class PropsError extends RolloutsError {
  override readonly name = "PropsError";
  readonly problems: readonly string[];

  constructor(what: string, problems: readonly string[]) {
    super(
      `${what}: ${problems.length} invalid prop${problems.length === 1 ? "" : "s"}:\n${problems.map((p) => `  - ${p}`).join("\n")}`,
    );
    this.problems = problems;
  }
}

const known = (v: unknown): v is string => typeof v === "string" && !Token.isUnresolved(v);

const RETENTIONS = new Set<unknown>(Object.values(logs.RetentionDays));
const REMOVAL_POLICIES = new Set(["destroy", "retain", "snapshot", "retain-on-update-or-delete"]);
const WORKSPACE_ARN = /^arn:aws[a-z-]*:aps:([a-z0-9-]+):(\d{12}):workspace\/(ws-[A-Za-z0-9-]+)$/;
const WORKSPACE_ID = /^ws-[A-Za-z0-9-]+$/;
const REGION = /^[a-z]{2}(-[a-z]+)+-\d$/;

/** Problems of the controller's props (empty: all good). */
export function controllerProblems(props: RolloutControllerProps): string[] {
  const problems: string[] = [];
  if (known(props.tableName) && !/^[A-Za-z0-9_.-]{3,255}$/.test(props.tableName)) {
    problems.push(
      `tableName: "${props.tableName}" must be 3–255 characters of letters, digits, "_", "." and "-"`,
    );
  }
  if (props.logRetention !== undefined && !RETENTIONS.has(props.logRetention)) {
    problems.push(`logRetention: ${String(props.logRetention)} is not a logs.RetentionDays value`);
  }
  if (props.removalPolicy !== undefined && !REMOVAL_POLICIES.has(props.removalPolicy)) {
    problems.push(`removalPolicy: ${String(props.removalPolicy)} is not a RemovalPolicy`);
  }
  if (props.cloudWatchMetrics !== undefined && typeof props.cloudWatchMetrics !== "boolean") {
    problems.push("cloudWatchMetrics: must be true or false");
  }
  const prom = props.prometheus as { url?: unknown; workspace?: unknown; region?: unknown } | undefined;
  if (prom !== undefined) {
    const hasUrl = prom.url !== undefined;
    const hasWorkspace = prom.workspace !== undefined;
    if (hasUrl === hasWorkspace) {
      problems.push(
        "prometheus: give exactly one of url (a Prometheus server) or workspace (an AMP workspace)",
      );
    }
    if (hasUrl && known(prom.url) && !/^https?:\/\/[^\s/]+/.test(prom.url)) {
      problems.push(`prometheus.url: "${prom.url}" is not an http(s) URL`);
    }
    if (
      hasWorkspace &&
      known(prom.workspace) &&
      !WORKSPACE_ARN.test(prom.workspace) &&
      !WORKSPACE_ID.test(prom.workspace)
    ) {
      problems.push(
        `prometheus.workspace: "${prom.workspace}" is neither an AMP workspace ARN nor an ID (ws-…)`,
      );
    }
    if (prom.region !== undefined && known(prom.region) && !REGION.test(prom.region)) {
      problems.push(`prometheus.region: "${prom.region}" is not a region name`);
    }
    if (hasUrl && prom.region !== undefined) {
      problems.push("prometheus.region: only with workspace (a plain URL is not signed)");
    }
  }
  return problems;
}

/** An AMP workspace's ID and region, from an ARN or an ID plus a region. */
export function parseWorkspace(
  workspace: string,
  region: string | undefined,
): { id: string; region?: string; account?: string } {
  const arn = WORKSPACE_ARN.exec(workspace);
  if (arn) return { id: arn[3] ?? "", region: region ?? arn[1], account: arn[2] };
  return region === undefined ? { id: workspace } : { id: workspace, region };
}

/** A rollout's spec, parsed (files are read now, at synth time), or the problems in it. */
export function resolveSpec(source: RolloutSpecSource): { spec?: RolloutSpec; problems: string[] } {
  if (source === null || typeof source !== "object")
    return { problems: ["spec: give a RolloutSpec or {files}"] };
  if ("files" in source) {
    if (!Array.isArray(source.files) || source.files.length === 0) {
      return { problems: ["spec.files: give at least one file"] };
    }
    const unreadable: Problem[] = [];
    const sources = readSourcesSync(source.files, unreadable);
    const problems = unreadable.map((p) => `spec.files: ${formatProblem(p)}`);
    if (problems.length > 0) return { problems };
    try {
      return { spec: parseRollout(sources).spec, problems };
    } catch (error) {
      return { problems: [`spec: ${(error as Error).message}`] };
    }
  }
  const parsed = RolloutSpecSchema.safeParse(source);
  if (!parsed.success) return { problems: [`spec: ${describeIssues(parsed.error, "RolloutSpec")}`] };
  return { spec: parsed.data, problems: [] };
}

/**
 * The target's settings as they are embedded in the workflow (without the construct-only
 * `passRoles`), and the problems the target's own zod schema finds. Tokens (ARNs of other
 * constructs) cannot be checked now: they are replaced by well-formed stand-ins for validation.
 */
export function resolveTarget(
  target: RolloutTarget,
  embedded = false,
): {
  settings: Record<string, unknown>;
  problems: string[];
} {
  if (target === null || typeof target !== "object") return { settings: {}, problems: ["target: required"] };
  let { passRoles: _roles, ...settings } = target as RolloutTarget & { passRoles?: unknown };
  const problems: string[] = [];
  if (target.type === "kubernetes") {
    const resolved = kubernetesSettings(target, embedded);
    settings = resolved.settings as typeof settings;
    problems.push(...resolved.problems);
  }
  let n = 0;
  const probe = Object.fromEntries(
    Object.entries(settings).map(([key, value]) => [
      key,
      typeof value === "string" && Token.isUnresolved(value) ? standIn(key, n++) : value,
    ]),
  );
  // Without a way to the cluster, that one problem is reported, not the settings' missing auth.
  if (target.type === "kubernetes" && probe.auth === undefined) {
    probe.auth = { type: "token", token: "" };
    probe.server ??= "https://stand-in.example";
  }
  for (const problem of targetSettingsProblems(probe)) problems.push(`target.${problem}`);
  return { settings, problems };
}

function standIn(key: string, n: number): string {
  const arn = (kind: string) =>
    `arn:aws:elasticloadbalancing:us-east-1:000000000000:${kind}/app/token/${n}/${n}`;
  if (/ruleArn$/i.test(key)) return `${arn("listener-rule")}/${n}`;
  if (/listenerArn$/i.test(key)) return arn("listener");
  if (key === "server") return `https://token-${n}.example`;
  if (key === "executionRoleArn") return `arn:aws:iam::000000000000:role/token-${n}`;
  if (key === "functionArn") return `arn:aws:lambda:us-east-1:000000000000:function:token-${n}`;
  if (/^targetGroup/.test(key))
    return `arn:aws:elasticloadbalancing:us-east-1:000000000000:targetgroup/token/${n}`;
  return `token-${n}`;
}

/** Problems of `addRollout`'s options other than the spec and the target. */
export function triggerProblems(options: RolloutOptions): string[] {
  const problems: string[] = [];
  const trigger = options.trigger as RolloutOptions["trigger"] | undefined;
  if (!trigger?.repository)
    problems.push("trigger.repository: required (the ECR repository whose pushes start the rollout)");
  if (trigger?.tagPattern !== undefined && known(trigger.tagPattern)) {
    const problem = tagPatternProblem(trigger.tagPattern);
    if (problem) problems.push(`trigger.tagPattern: ${problem}`);
  }
  return problems;
}

/** Whether any analysis of the spec (steps or background) reads CloudWatch, directly or through a judge. */
export function usesCloudWatch(spec: RolloutSpec): boolean {
  return analysesOf(spec).some((a) =>
    a.templates.some((t) =>
      t.metrics.some((m) => providersRead(m.provider).some((p) => p.cloudWatch !== undefined)),
    ),
  );
}

/** Whether an analysis of the spec measures with a Kubernetes Job (`provider.job`). */
export function usesJob(spec: RolloutSpec): boolean {
  return analysesOf(spec).some((a) => a.templates.some((t) => t.metrics.some((m) => m.provider.job)));
}

/** Every analysis of the spec (steps or background). */
function analysesOf(spec: RolloutSpec) {
  return [
    ...spec.steps.flatMap((s) => stepAnalysis(s) ?? []),
    ...(spec.backgroundAnalysis ? [spec.backgroundAnalysis.analysis] : []),
  ];
}

/** An IAM role's ARN, the only thing `sts:AssumeRole` can be granted on. */
const ROLE_ARN = /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/;

/**
 * The roles the spec's Prometheus metrics assume (`authentication.sigv4.roleArn`), directly or
 * through a judge's readings, each once in the order first named; what is not a role's ARN (an
 * `{{args...}}` left for run time, a typo) is a problem, since the measuring functions are granted
 * `sts:AssumeRole` on exactly these.
 */
export function assumedRoleArns(spec: RolloutSpec, problems: string[]): string[] {
  const out: string[] = [];
  for (const analysis of analysesOf(spec)) {
    for (const template of analysis.templates) {
      for (const metric of template.metrics) {
        for (const provider of providersRead(metric.provider)) {
          const roleArn = provider.prometheus?.authentication?.sigv4?.roleArn;
          if (roleArn === undefined) continue;
          if (!ROLE_ARN.test(roleArn)) {
            const problem = `spec: template "${template.name}", metric "${metric.name}": authentication.sigv4.roleArn "${roleArn}" is not an IAM role's ARN (arn:aws:iam::ACCOUNT:role/NAME): the measuring functions may assume exactly the roles the spec names`;
            if (!problems.includes(problem)) problems.push(problem);
          } else if (!out.includes(roleArn)) out.push(roleArn);
        }
      }
    }
  }
  return out;
}

/**
 * The spec with its error budget shared between its gates (the construct's `errorBudget` over the
 * spec's own): a spec read from files has it already, a `RolloutSpec` given as an object gets it
 * here, and the prop may change it. Problems (a bad budget, gates that spend more) are added.
 */
export function budgetedSpec(
  spec: RolloutSpec,
  errorBudget: number | undefined,
  problems: string[],
): RolloutSpec {
  if (errorBudget !== undefined && !(typeof errorBudget === "number" && errorBudget > 0 && errorBudget < 1)) {
    problems.push(`errorBudget: a probability strictly between 0 and 1 (0.05), got ${String(errorBudget)}`);
    return spec;
  }
  const found: Problem[] = [];
  const withBudget = { ...spec, ...(errorBudget !== undefined ? { errorBudget } : {}) };
  const out = applyErrorBudget(withBudget, { file: "spec" }, found);
  problems.push(...found.map((p) => `spec: ${p.message}`));
  return out;
}
