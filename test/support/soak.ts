import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { SageMakerClient } from "@aws-sdk/client-sagemaker";
import { SFNClient } from "@aws-sdk/client-sfn";
import { ConfiguredRetryStrategy } from "@smithy/core/retry";
import { SfnTaskTokens } from "../../functions/abort/task-tokens.ts";
import { clientConfig } from "../../functions/aws-clients.ts";
import { ManualClock } from "../../functions/clock.ts";
import { EventBridgePublisher } from "../../functions/events/eventbridge.ts";
import { MetricProviders } from "../../functions/metrics/index.ts";
import type { MetricProvider } from "../../functions/metrics/port.ts";
import { MemoryRolloutStore } from "../../functions/store/memory.ts";
import type { RolloutStore } from "../../functions/store/port.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import type { TimerFiring } from "../../functions/timer/port.ts";
import { SageMakerTraffic } from "../../functions/traffic/sagemaker.ts";
import { readinessChecksFor } from "../../functions/traffic/settings.ts";
import { registryHost } from "../../functions/trigger/event.ts";
import { SfnExecutions } from "../../functions/trigger/executions.ts";
import {
  type RolloutTriggerOutcome,
  startRollout,
  type TriggerDeps,
} from "../../functions/trigger/start-rollout.ts";
import type { WorkflowDeps } from "../../functions/workflow/deps.ts";
import { RecordingMetricsSink } from "../../functions/workflow/metrics.ts";
import { abortRollout, type OperateDeps, promoteRollout } from "../../functions/workflow/operate.ts";
import { localFunctionArn } from "../../local/asl/intrinsics.ts";
import type { LocalSageMaker } from "../../local/aws/sagemaker.ts";
import { type HandlerDeps, handlerFactories } from "../../local/handler-factories.ts";
import { type Runtime, type RuntimeFunction, startRuntime } from "../../local/runtime.ts";
import { FUNCTION_PLACEHOLDERS } from "../../statemachine/compile.ts";
import { compile, type RolloutSpec, RolloutSpecSchema, type Step } from "../../statemachine/index.ts";
import { AsyncDelivery } from "./async-delivery.ts";
import { ACCOUNT, ecrPush } from "./ecr.ts";
import { functionSubstitutions, T0 } from "./embedded-rollout.ts";
import { digest } from "./fake-rollout.ts";
import { judgeMetric } from "./judge-stats.ts";
import { analysisSpec, metric } from "./rollout-spec.ts";
import { type FaultKind, FaultPlan, ROLLOUT_NAME } from "./soak-faults.ts";
import { FakeTraffic } from "./traffic.ts";

/**
 * What a rollout of the soak is pushed and told, and so how it must end:
 * - `good`: a canary with threshold analyses, v2 pushed and healthy → v2 promoted;
 * - `bad`: the same canary, v2 failing its analysis → aborted, v1 stays;
 * - `superseded`: v2 pushed, then v3 during v2's first analysis → v2's execution superseded, v3 promoted;
 * - `promoted`: a canary with an indefinite pause that `rollouts promote` ends → v2 promoted;
 * - `aborted`: the same canary, stopped at its pause by `rollouts abort` → aborted, v1 stays;
 * - `blue-green`: preview, an analysis of the preview, then the switch → v2 promoted;
 * - `judged`: a canary whose analysis is a judge (a sequential test of the candidate's errors
 *   against the stable side's, both read at each look), v2 as good as v1 → v2 promoted;
 * - `model`: a model rollout on the SageMaker target (the runtime's SageMaker, its endpoint
 *   created before the first push with v1's model), v2's model healthy → promoted, the endpoint
 *   ends on v2's model alone;
 * - `model-bad`: the same, v2's model failing its analysis → aborted, the endpoint ends on v1's
 *   model alone.
 */
export const SCRIPTS = [
  "good",
  "bad",
  "superseded",
  "promoted",
  "aborted",
  "blue-green",
  "judged",
  "model",
  "model-bad",
] as const;
export type Script = (typeof SCRIPTS)[number];

/** The version whose metrics fail. */
const BAD_VERSION = "v2-bad";
/** The image digest (`digest(n)`) of a bad model: a model's metrics come from what its endpoint serves. */
const BAD_MODEL = 9;
/** The role the candidate models run as (`CreateModel`'s `ExecutionRoleArn`). */
const MODEL_ROLE = "arn:aws:iam::000000000000:role/sagemaker-execution";
/** Where the runtime's SageMaker says a model's container answers; the soak sends it no request. */
const MODEL_SERVER = "http://127.0.0.1:9/";

/** When a model rollout's first push comes after its endpoint's creation started. */
const ENDPOINT_CREATED_MS = 2 * 60_000;

/** Whether `script` rolls out a model on the SageMaker target. */
function isModel(script: Script): boolean {
  return script === "model" || script === "model-bad";
}

/** The image a push of `digest(n)` to a model rollout's repository hands its target (`ecrPush`'s region). */
function modelImage(name: string, n: number): string {
  return `${registryHost(ACCOUNT, "us-west-2")}/${name}@${digest(n)}`;
}

/** Whether the endpoint `name` sends any traffic to a variant whose model runs image `n`. */
function servesModel(sagemaker: LocalSageMaker, name: string, n: number): boolean {
  return sagemaker
    .describeEndpoint(name)
    .variants.some(
      (v) => v.CurrentWeight > 0 && sagemaker.describeModel(v.ModelName).artifact === modelImage(name, n),
    );
}

/**
 * How a model rollout's endpoint differs from serving image `n` alone: in service, nothing
 * pending, no shadow, one production variant, its model running that image with all the weight.
 */
function endpointDifferences(sagemaker: LocalSageMaker, name: string, n: number, tag: string): string[] {
  const out: string[] = [];
  const endpoint = sagemaker.describeEndpoint(name);
  if (endpoint.status !== "InService") out.push(`endpoint ${endpoint.status}, expected InService`);
  if (endpoint.pending !== undefined) out.push("an endpoint update is still pending");
  if (endpoint.failureReason !== undefined) out.push(`endpoint failure: ${endpoint.failureReason}`);
  if (endpoint.shadows.length > 0) out.push(`${endpoint.shadows.length} shadow variant(s) left`);
  const variants = endpoint.variants.map((v) => {
    const image = sagemaker.describeModel(v.ModelName).artifact;
    const version = image === modelImage(name, n) ? tag : image.slice(image.lastIndexOf("@") + 1);
    return `${v.VariantName} (${version}) weight ${v.CurrentWeight}/${v.DesiredWeight}`;
  });
  const only = endpoint.variants[0];
  if (
    endpoint.variants.length !== 1 ||
    only === undefined ||
    sagemaker.describeModel(only.ModelName).artifact !== modelImage(name, n) ||
    !(only.CurrentWeight > 0) ||
    only.CurrentWeight !== only.DesiredWeight
  )
    out.push(`endpoint variants ${variants.join(", ")}, expected ${tag}'s model alone with all the weight`);
  return out;
}

/** The second push of a script: its tag and image digest. */
function secondPush(script: Script): { tag: string; n: number } {
  if (script === "model-bad") return { tag: BAD_VERSION, n: BAD_MODEL };
  return { tag: script === "bad" ? BAD_VERSION : "v2", n: 2 };
}
/** Virtual time between a rollout's first revision and its second push. */
const SECOND_PUSH_MS = 10 * 60_000;
/** When a superseding push comes after the second one: during its first analysis. */
const SUPERSEDE_AFTER_MS = 75_000;
/** When a person acts on a paused rollout, and how long they wait before trying again. */
const OPERATOR_AFTER_MS = 3 * 60_000;
const OPERATOR_RETRY_MS = 60_000;
/** A Timer firing due this long after the last execution ended is one left behind. */
const LEFT_BEHIND_MS = 60 * 60_000;
/** A push or an operator command is tried this many times at most. */
const MAX_ATTEMPTS = 20;

export interface SoakOptions {
  /** Rollouts (scripts assigned in turn). */
  count: number;
  /** Pushes per virtual minute across the fleet (the second pushes are spread at this rate). */
  pushesPerMinute?: number;
  seed?: number;
  /** Probability of each enabled fault at each place it can happen. */
  rate?: number;
  faults?: readonly FaultKind[];
}

/** One rollout's expected end and what it went through. */
export interface SoakRollout {
  name: string;
  script: Script;
  router: FakeTraffic;
  /** Executions started by accepted pushes, in order, with the tag pushed. */
  executions: Array<{ tag: string; arn: string }>;
  /** Push and operator attempts that failed (and were tried again) and their errors. */
  retried: string[];
  /** What the operator was told, in order. */
  operations: string[];
}

export interface SoakRun {
  runtime: Runtime;
  clock: ManualClock;
  store: MemoryRolloutStore;
  plan: FaultPlan;
  rollouts: SoakRollout[];
  /** Virtual ms from the first push to the last decision. */
  virtualMs: number;
  /**
   * How the Timer's firings reached resume: every failed attempt (Lambda's async ones and the
   * redelivery queue's), the firings redelivered, and the ones lost to the dead-letter queue.
   */
  delivery: AsyncDelivery;
  close(): Promise<void>;
}

function soakSpec(name: string, script: Script): RolloutSpec {
  const analysis = (suffix: string) =>
    analysisSpec(
      metric({
        name: `${name}-${suffix}`,
        interval: 30,
        initialDelay: 0,
        count: 4,
        failureLimit: 2,
        successCondition: "result[0] >= 0.95",
      }),
    );
  const threshold: Step[] = [
    { kind: "setWeight", weight: 20 },
    { kind: "analysis", origin: "step", analysis: analysis("a") },
    { kind: "setWeight", weight: 50 },
    { kind: "pause", duration: 60, reason: "CanaryPauseStep" },
    { kind: "analysis", origin: "step", analysis: analysis("b") },
  ];
  const manual: Step[] = [
    { kind: "setWeight", weight: 20 },
    { kind: "pause", reason: "CanaryPauseStep" },
    { kind: "setWeight", weight: 60 },
    { kind: "analysis", origin: "step", analysis: analysis("a") },
  ];
  const judged: Step[] = [
    { kind: "setWeight", weight: 20 },
    { kind: "analysis", origin: "step", analysis: { templates: [judgeTemplateOf(name)], args: {} } },
    { kind: "setWeight", weight: 50 },
  ];
  const blueGreen: Step[] = [
    { kind: "preview" },
    { kind: "analysis", origin: "step", analysis: analysis("a") },
    { kind: "setWeight", weight: 100 },
  ];
  const model: Step[] = [
    { kind: "setWeight", weight: 25 },
    { kind: "analysis", origin: "step", analysis: analysis("a") },
    { kind: "setWeight", weight: 50 },
    { kind: "analysis", origin: "step", analysis: analysis("b") },
  ];
  const steps = isModel(script)
    ? model
    : script === "promoted" || script === "aborted"
      ? manual
      : script === "blue-green"
        ? blueGreen
        : script === "judged"
          ? judged
          : threshold;
  return RolloutSpecSchema.parse({
    name,
    revision: "74a0fb7474",
    source: "native",
    strategy: script === "blue-green" ? "blueGreen" : "canary",
    trafficRouting: true,
    steps,
  });
}

/**
 * A judged rollout's analysis: one `sequential-rate` gate on errors, a look every 30 s, reading
 * each side's requests and failures since the analysis started from `web` (the fleet's stats).
 */
function judgeTemplateOf(name: string) {
  const side = (which: string) => `${which}:
  web: {url: "http://stats/${name}?side=${which}&window={{judge.elapsedSeconds}}"}
  bad: result.requests - result.ok
  n: result.requests`;
  const metric = judgeMetric(
    "initialDelay: 10s\ninterval: 30s\ncount: 10",
    `test: sequential-rate\nlabel: errors\nminSamples: 100\nsamples: 400\n${side("candidate")}\n${side("stable")}`,
    `${name}-j`,
  );
  return { name: "gate", kind: "AnalysisTemplate" as const, metrics: [metric] };
}

/** Requests per second each side of a judged rollout serves, and the share of them that fail. */
const JUDGED_RPS = 10;
const JUDGED_ERRORS = 0.01;

/**
 * Answers each rollout's metrics from the version its router runs as candidate (a model
 * rollout's from the models its endpoint sends traffic to); a judge's side
 * (`http://stats/<rollout>?side=…&window=S`) with that side's requests and successes in S
 * seconds: both sides fail 1% of their requests (the bad version 50%).
 */
class FleetProvider implements MetricProvider {
  constructor(
    readonly routers: Map<string, FakeTraffic>,
    /** Whether a model rollout's endpoint sends traffic to a bad model; undefined for another rollout. */
    readonly servesBadModel: (rollout: string) => boolean | undefined,
  ) {}

  async measure(m: { name: string; provider?: { web?: { url?: string } } }) {
    const url = m.provider?.web?.url;
    if (url?.startsWith("http://stats/")) {
      const parsed = new URL(url);
      const router = this.routers.get(parsed.pathname.slice(1));
      if (router === undefined) return { ok: false as const, message: `no rollout for ${url}` };
      const candidate = parsed.searchParams.get("side") === "candidate";
      const errors = candidate && router.candidate === BAD_VERSION ? 0.5 : JUDGED_ERRORS;
      const requests = JUDGED_RPS * Number(parsed.searchParams.get("window"));
      const answer = { requests, ok: requests - Math.round(errors * requests) };
      return { ok: true as const, result: answer, value: JSON.stringify(answer) };
    }
    const rollout = m.name.replace(/-[ab]$/, "");
    const router = this.routers.get(rollout);
    if (router === undefined) return { ok: false as const, message: `no rollout for metric ${m.name}` };
    const bad = this.servesBadModel(rollout) ?? router.candidate === BAD_VERSION;
    const v = bad ? 0.5 : 0.99;
    return { ok: true as const, result: [v], value: `[${v}]` };
  }
}

interface Action {
  at: number;
  rollout: SoakRollout;
  run: () => Promise<"done" | "again">;
  attempt: number;
}

/**
 * Runs `count` rollouts of mixed scripts in one embedded runtime (one store, one façade, one
 * clock in virtual time): the shipped handlers over the store in memory, task tokens, executions
 * and lifecycle events through the real SDK clients and adapters against the façade, the Timer on
 * the runtime's in-process timer, each rollout's traffic in a `FakeTraffic`; faults from `plan`.
 * Pushes go through the trigger's domain (`startRollout`), promotions and aborts through the
 * CLI's (`promoteRollout`, `abortRollout`), concurrently with the executions.
 */
export async function runSoak(options: SoakOptions): Promise<SoakRun> {
  const clock = new ManualClock(T0);
  const plan = new FaultPlan({
    seed: options.seed ?? 1,
    rate: options.rate ?? 0,
    kinds: options.faults ?? [],
    now: () => clock.now(),
  });
  const memory = new MemoryRolloutStore({ clock });
  const store = plan.store(memory);
  const routers = new Map<string, FakeTraffic>();
  const rollouts: SoakRollout[] = [];
  const specs: RolloutSpec[] = [];
  const models = new Set<string>();
  for (let i = 0; i < options.count; i++) {
    const script = SCRIPTS[i % SCRIPTS.length] as Script;
    const name = `svc-${String(i).padStart(4, "0")}`;
    const router = new FakeTraffic();
    routers.set(name, router);
    rollouts.push({ name, script, router, executions: [], retried: [], operations: [] });
    specs.push(soakSpec(name, script));
    if (isModel(script)) models.add(name);
  }
  let runtime!: Runtime;
  let sagemakerClient!: SageMakerClient;
  const deps = {
    store,
    clock,
    metrics: new RecordingMetricsSink(),
    // The judges read both sides through the providers' router, as the analysis function does.
    // The faults enter where a provider fails: at the query each side's reading makes (a judge
    // turns a failed or NaN reading into its own verdict), not in the judge's answer.
    providers: new MetricProviders({
      web: plan.provider(
        new FleetProvider(routers, (name) =>
          models.has(name) ? servesModel(runtime.sagemaker, name, BAD_MODEL) : undefined,
        ),
      ),
    }),
    targetFor: (settings: unknown) => {
      if ((settings as { type?: string }).type === "sagemaker")
        return new SageMakerTraffic({ sagemaker: sagemakerClient }, settings, clock);
      const name = (settings as { name?: string }).name ?? "";
      const router = routers.get(name);
      if (router === undefined) throw new Error(`no router for target ${JSON.stringify(settings)}`);
      return router;
    },
  } as Partial<WorkflowDeps> as WorkflowDeps;
  const handlerDeps: HandlerDeps = { workflow: () => deps, trigger: () => triggerDeps };
  const functions: Record<string, RuntimeFunction> = {};
  const roles = [
    ...(Object.keys(FUNCTION_PLACEHOLDERS) as Array<keyof typeof FUNCTION_PLACEHOLDERS>),
    "resume" as const,
  ];
  for (const role of roles)
    functions[role] = { handler: plan.handler(role, handlerFactories[role](handlerDeps)) };
  // The Timer's target is invoked asynchronously: Lambda tries a failed event twice more, 1 and 2
  // minutes later, then hands it to the redelivery queue, which gives it to resume again.
  const delivery = new AsyncDelivery({
    lambda: () => runtime.lambda,
    timer: () => runtime.timer,
    now: () => clock.now(),
    functionArn: localFunctionArn("resume"),
  });
  const deliver = (firing: TimerFiring) => delivery.deliver(firing);
  runtime = await startRuntime({
    clock,
    definitions: specs.map((spec) => ({
      name: spec.name,
      // Compiled as the stack compiles it: a SageMaker target polls its endpoint after each step.
      definition: (models.has(spec.name)
        ? compile(spec, {
            target: {
              type: "sagemaker",
              endpointName: spec.name,
              executionRoleArn: MODEL_ROLE,
            },
            readinessChecks: readinessChecksFor("sagemaker"),
          })
        : compile(spec, { target: { type: "fake", name: spec.name } })) as never,
      substitutions: functionSubstitutions(),
    })),
    functions,
    intercept: plan.interceptor(),
    random: (executionArn) => plan.random(executionArn),
    onTimerFiring: (firing) => plan.firings(runtime.timer, deliver)(firing),
  });
  const config = {
    ...clientConfig(),
    // The SDK's retries, its attempts and retry quota as shipped, without the wall-clock wait
    // before each: the soak's time is virtual, nothing moves while a client waits, and a wait
    // stalls the whole fleet's settling.
    retryStrategy: new ConfiguredRetryStrategy(clientConfig().maxAttempts ?? 3, () => 0),
    region: "us-east-1",
    endpoint: runtime.facadeUrl,
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  };
  const sfnClient = new SFNClient(config);
  const eventsClient = new EventBridgeClient(config);
  sagemakerClient = new SageMakerClient(config);
  plan.tag(sfnClient);
  plan.tag(eventsClient);
  plan.tag(sagemakerClient);
  // Each model rollout's endpoint, as CloudFormation creates it before any rollout: v1's model.
  // Every model pushed has a container that starts (a bad model answers badly, it does not crash).
  for (const name of models) {
    for (const n of [1, 2, BAD_MODEL]) runtime.sagemaker.serve(modelImage(name, n), MODEL_SERVER);
    runtime.sagemaker.createModel({
      ModelName: `${name}-initial`,
      PrimaryContainer: { Image: modelImage(name, 1) },
    });
    runtime.sagemaker.createEndpointConfig({
      EndpointConfigName: `${name}-initial`,
      ProductionVariants: [{ VariantName: "initial", ModelName: `${name}-initial`, InitialVariantWeight: 1 }],
    });
    runtime.sagemaker.createEndpoint({ EndpointName: name, EndpointConfigName: `${name}-initial` });
  }
  const tokens = new SfnTaskTokens(sfnClient);
  deps.tokens = tokens;
  deps.timer = plan.timer(runtime.timer);
  deps.events = new EventBridgePublisher({ client: eventsClient });
  const executions = new SfnExecutions(sfnClient);
  const triggerDeps: TriggerDeps = {
    store,
    executions,
    tokens,
    clock,
    events: deps.events,
    routes: specs.map((spec) => ({
      rollout: spec.name,
      repository: spec.name,
      stateMachineArn: runtime.stateMachineArn(spec.name),
    })),
  };
  const operate: OperateDeps = { store, tokens, executions, clock };

  let pushes = 0;
  const push = (r: SoakRollout, n: number, tag: string) => async (): Promise<"done" | "again"> => {
    const id = ++pushes;
    try {
      const result = await plan.within(r.name, () =>
        startRollout(
          triggerDeps,
          ecrPush({
            id: `push-${id}`,
            time: new Date(clock.now()).toISOString().replace(/\.\d{3}Z$/, "Z"),
            repository: r.name,
            digest: digest(n),
            tag,
          }),
        ),
      );
      const outcome =
        result.kind === "handled" ? (result.rollouts[0] as RolloutTriggerOutcome | undefined) : undefined;
      if (outcome?.outcome === "started") r.executions.push({ tag, arn: outcome.executionArn });
      else if (outcome?.outcome !== "duplicate")
        throw new Error(`push ${tag} not started: ${JSON.stringify(result)}`);
      return "done";
    } catch (error) {
      // EventBridge delivers the push to the trigger Lambda again when it fails.
      r.retried.push(`push ${tag}: ${(error as Error).name}: ${(error as Error).message}`);
      return "again";
    }
  };
  const operator = (r: SoakRollout, what: "promote" | "abort") => async (): Promise<"done" | "again"> => {
    try {
      // A careful operator looks before acting again: a command whose answer was lost (a fault
      // after its write) may have taken effect, and a second promote would end the next wait.
      const taken = await plan.within(r.name, () => alreadyTaken(store, r, what));
      if (taken !== undefined) {
        r.operations.push(`${what}: already taken effect (${taken})`);
        return "done";
      }
      const outcome = await plan.within(r.name, () =>
        what === "promote"
          ? promoteRollout(operate, r.name, false)
          : abortRollout(operate, r.name, "stopped by the soak's operator"),
      );
      r.operations.push(`${what}: ${outcome.message}`);
      return outcome.ok ? "done" : "again";
    } catch (error) {
      r.retried.push(`${what}: ${(error as Error).name}: ${(error as Error).message}`);
      return "again";
    }
  };

  const spacing = 60_000 / (options.pushesPerMinute ?? 60);
  const actions: Action[] = [];
  rollouts.forEach((r, i) => {
    const start = T0 + Math.round(i * spacing);
    const second = start + SECOND_PUSH_MS;
    // A model rollout's endpoint is created at the start and takes the runtime's SageMaker a
    // minute: its first release waits until it is in service, as a stack's does.
    const first = isModel(r.script) ? start + ENDPOINT_CREATED_MS : start;
    actions.push({ at: first, rollout: r, run: push(r, 1, "v1"), attempt: 1 });
    const { tag, n } = secondPush(r.script);
    actions.push({ at: second, rollout: r, run: push(r, n, tag), attempt: 1 });
    if (r.script === "superseded")
      actions.push({ at: second + SUPERSEDE_AFTER_MS, rollout: r, run: push(r, 3, "v3"), attempt: 1 });
    if (r.script === "promoted")
      actions.push({ at: second + OPERATOR_AFTER_MS, rollout: r, run: operator(r, "promote"), attempt: 1 });
    if (r.script === "aborted")
      actions.push({ at: second + OPERATOR_AFTER_MS, rollout: r, run: operator(r, "abort"), attempt: 1 });
  });

  const running = () =>
    specs.some((spec) =>
      runtime.sfn
        .listExecutions({ stateMachineArn: runtime.stateMachineArn(spec.name) })
        .some((e) => e.status === "RUNNING"),
    );
  const byTime = (a: Action, b: Action) => a.at - b.at;
  actions.sort(byTime);
  let ended: number | undefined;
  for (let steps = 0; ; steps++) {
    if (steps > 1_000_000) throw new Error("the soak does not come to an end");
    await runtime.settle();
    const nextAction = actions[0]?.at;
    const nextTimer = runtime.timer.nextDueAt();
    if (nextAction === undefined && !running()) {
      // Every execution has ended: what they left on the Timer (a scale-down after a promotion)
      // fires now; a firing due long after is left behind, and the checker names it.
      ended ??= clock.now();
      if (nextTimer === undefined || nextTimer > ended + LEFT_BEHIND_MS) break;
    }
    if (nextAction !== undefined && (nextTimer === undefined || nextAction <= nextTimer)) {
      if (nextAction > clock.now()) await runtime.advanceTo(nextAction);
      const due = actions.filter((a) => a.at <= clock.now());
      actions.splice(0, due.length);
      const results = await Promise.all(due.map(async (a) => ({ a, result: await a.run() })));
      for (const { a, result } of results) {
        if (result !== "again") continue;
        if (a.attempt >= MAX_ATTEMPTS) a.rollout.retried.push(`gave up after ${MAX_ATTEMPTS} attempts`);
        else actions.push({ ...a, at: clock.now() + OPERATOR_RETRY_MS / 2, attempt: a.attempt + 1 });
      }
      actions.sort(byTime);
      continue;
    }
    if (nextTimer === undefined) break; // executions wait on something nothing will answer: the checker says which
    await runtime.advanceTo(nextTimer);
  }
  return {
    runtime,
    clock,
    store: memory,
    plan,
    rollouts,
    virtualMs: (ended ?? clock.now()) - T0,
    delivery,
    close: async () => {
      sfnClient.destroy();
      eventsClient.destroy();
      sagemakerClient.destroy();
      await runtime.close();
    },
  };
}

/** The index of the pause the soak's operator ends (the `promoted` and `aborted` scripts' steps). */
const OPERATOR_PAUSE_STEP = 1;

/**
 * What shows that the operator's `what` on `r` has taken effect, or undefined: the second push's
 * rollout past its pause (promote) or aborted (abort).
 */
async function alreadyTaken(
  store: RolloutStore,
  r: SoakRollout,
  what: "promote" | "abort",
): Promise<string | undefined> {
  const item = await store.get(r.name);
  if (item === undefined || item.currentRevision?.tag !== "v2") return undefined;
  if (what === "abort") return item.phase === "Degraded" ? `${item.phase}: ${item.message}` : undefined;
  if (item.phase === "Healthy") return "Healthy";
  return item.stepIndex > OPERATOR_PAUSE_STEP
    ? `${item.phase} at step ${item.stepIndex + 1}/${item.stepCount}`
    : undefined;
}

/** The end a script calls for. */
export function expectedEnd(script: Script): {
  phase: "Healthy" | "Degraded";
  stable: string;
  lastExecution: string;
} {
  switch (script) {
    case "good":
    case "promoted":
    case "blue-green":
    case "judged":
    case "model":
      return { phase: "Healthy", stable: "v2", lastExecution: "SUCCEEDED" };
    case "superseded":
      return { phase: "Healthy", stable: "v3", lastExecution: "SUCCEEDED" };
    case "bad":
      return { phase: "Degraded", stable: "v1", lastExecution: "RolloutAborted" };
    case "aborted":
    case "model-bad":
      return { phase: "Degraded", stable: "v1", lastExecution: "RolloutAborted" };
  }
}

/** How an execution ended: `SUCCEEDED`, its error (`RolloutAborted`, `ExecutionSuperseded`, …) or `RUNNING`. */
export function endOf(runtime: Runtime, arn: string): string {
  const d = runtime.sfn.describeExecution(arn);
  if (d.status === "SUCCEEDED" || d.status === "RUNNING") return d.status;
  return d.error ?? d.status;
}

/**
 * Every difference between how each rollout ended and what its script calls for: the rollout's
 * phase, stable revision and traffic, how each of its executions ended, no task token stored, no
 * execution running, no firing of its own left on the Timer, its events in time order, and for a
 * judged rollout a gate that passed the candidate.
 */
export async function checkSoak(run: SoakRun): Promise<string[]> {
  const out: string[] = [];
  const pending = run.runtime.timer.pending();
  for (const r of run.rollouts) {
    const bad = (what: string) => out.push(`${r.name} (${r.script}): ${what}`);
    const expected = expectedEnd(r.script);
    const item: RolloutItem | undefined = await run.store.get(r.name);
    if (item === undefined) {
      bad("no rollout item");
      continue;
    }
    if (item.phase !== expected.phase)
      bad(`phase ${item.phase}, expected ${expected.phase} (${item.message})`);
    if (item.stableRevision?.tag !== expected.stable)
      bad(`stable revision ${item.stableRevision?.tag ?? "none"}, expected ${expected.stable}`);
    if (isModel(r.script)) {
      const n = expected.stable === "v1" ? 1 : 2;
      for (const d of endpointDifferences(run.runtime.sagemaker, r.name, n, expected.stable)) bad(d);
    } else {
      if (r.router.stable !== expected.stable)
        bad(`traffic's stable side runs ${r.router.stable}, expected ${expected.stable}`);
      if (r.router.canary !== 0) bad(`${r.router.canary}% of traffic still on the candidate`);
    }
    if (item.currentTaskToken !== null) bad(`a task token is still stored (waiting for ${item.waitingFor})`);
    const tags = r.executions.map((e) => e.tag);
    const wantTags = r.script === "superseded" ? ["v1", "v2", "v3"] : ["v1", secondPush(r.script).tag];
    if (tags.join() !== wantTags.join())
      bad(`executions started for ${tags.join(", ")}, expected ${wantTags.join(", ")}`);
    r.executions.forEach((e, i) => {
      const end = endOf(run.runtime, e.arn);
      const want =
        i === r.executions.length - 1
          ? expected.lastExecution
          : r.script === "superseded" && i === 1
            ? "ExecutionSuperseded"
            : "SUCCEEDED";
      if (end !== want) bad(`execution of ${e.tag} ended ${end}, expected ${want}`);
    });
    for (const e of run.runtime.sfn.listExecutions({ stateMachineArn: run.runtime.stateMachineArn(r.name) }))
      if (e.status === "RUNNING") bad(`execution ${e.name} still running`);
    const left = pending.filter((f) => JSON.stringify(f.payload ?? null).includes(`"${r.name}"`));
    if (left.length > 0) bad(`${left.length} timer firing(s) left: ${left.map((f) => f.key).join(", ")}`);
    if (r.script === "judged") {
      // Promoted by its judge: the last execution's analysis passed on the judge's evidence.
      const last = r.executions.at(-1)?.arn.split(":").at(-1) ?? "";
      const passed = item.events.some(
        (e) =>
          e.type === "AnalysisRunSuccessful" &&
          e.message.includes(last) &&
          e.message.includes(`Gate "${r.name}-j" passed`),
      );
      if (!passed) bad("its judge did not pass the candidate");
    }
    for (let i = 1; i < item.events.length; i++) {
      const [a, b] = [item.events[i - 1], item.events[i]];
      if (a !== undefined && b !== undefined && b.at < a.at)
        bad(`event ${i} (${b.type}) is older than the one before (${a.type})`);
    }
  }
  return out;
}

/**
 * What each rollout went through and how it ended, one line each: its executions' ends, its
 * phase and stable revision, the operator's answers, and the faults injected into its calls, in
 * the order it met them. Two runs of one seed give the same lines.
 */
export async function soakSummary(run: SoakRun): Promise<string[]> {
  const lines: string[] = [];
  const faults = new Map<string, string[]>();
  for (const f of run.plan.injected) {
    const name = ROLLOUT_NAME.exec(f.where)?.[0] ?? "fleet";
    faults.set(name, [...(faults.get(name) ?? []), `${f.kind}@${f.at - T0}`]);
  }
  for (const r of run.rollouts) {
    const item = await run.store.get(r.name);
    const ends = r.executions.map((e) => `${e.tag}=${endOf(run.runtime, e.arn)}`).join(" ");
    const seen = (faults.get(r.name) ?? []).sort().join(" ");
    lines.push(
      `${r.name} ${r.script}: ${ends}; ${item?.phase} ${item?.stableRevision?.tag}; ${r.operations.join(" | ")}; faults ${seen}`,
    );
  }
  return lines;
}
