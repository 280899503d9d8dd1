import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { costOf, EXPRESS_BILLING_STEP_MS, waitLoopCost } from "../../cli/simulate/cost.ts";
import { formatPlan } from "../../cli/simulate/plan.ts";
import {
  type RunCounts,
  type SecondRecord,
  SimulationInputError,
  type SimulationOptions,
  type SimulationRow,
} from "../../cli/simulate/runtime.ts";
import { ManualClock } from "../../functions/clock.ts";
import type { HandlerName } from "../../functions/config.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import { PropsError } from "../../infra/validate.ts";
import type { RolloutSpec } from "../../statemachine/index.ts";
import { type LocalDynamo, startDynamo } from "../dynamo.ts";
import { prometheusVersion } from "../prometheus.ts";
import { type RunningProxy, startProxy } from "../proxy/server.ts";
import { localProxyTarget } from "../proxy/target.ts";
import { type EmbeddedStack, startEmbeddedStack } from "../stack.ts";
import { type MeteredDynamo, meterDynamo } from "./dynamo-meter.ts";
import { type SimulatedPrometheus, startSimulatedPrometheus } from "./prometheus.ts";
import { checkUserFiles, loadSimulatedSpec, simulatedSpecText, unsupportedProviders } from "./spec-files.ts";
import { ExactSplit, PodModel, RequestClock } from "./split.ts";
import { type Behaviour, ServiceMetrics } from "./traffic.ts";

/**
 * `rollouts simulate`: how many requests a bad version reaches under a rollout, measured on the
 * real thing. Each plan runs the synthesized stack in the embedded runtime in virtual time (the
 * compiled workflow, the real handlers, the analysis with the templates' own queries against a
 * real Prometheus); every virtual second the simulator sends `rps` requests, splits them by the
 * weight the local proxy really has at that moment (or by its ready pods), fails the candidate's
 * share of them, writes the resulting series to Prometheus at that second's timestamp and records
 * each request in the proxy's own recorder (what the samples provider's `GET /compare` reads).
 */

/** The stable and the candidate, pushed as these image tags (the reference canary's own names). */
export const STABLE_TAG = "v1";
export const CANDIDATE_TAG = "v2";

/**
 * The most simulated requests one run sends, over all its plans (rps × duration × plans): each is
 * drawn, split and recorded one by one, so the figure bounds the run's time and memory (at the
 * limit, `--rps 100000 --duration 5m`: 61 s and 0.8 GB resident on a 2-core machine).
 */
export const MAX_SIMULATED_REQUESTS = 30_000_000;
/** The most plans one run compares. */
export const MAX_PLANS = 20;

const DEFAULT_DURATION = 300;
/** The virtual epoch of the first plan; each plan starts an hour after the previous one. */
const EPOCH = Date.parse("2026-01-01T00:00:00Z");
const PLAN_SPACING_MS = 3_600_000;
const STABLE: Behaviour = { errorRate: 0, latencyMedian: 0.05, latencySigma: 0.5 };

/** The rollout's steps in the short form, for the plan column; a blue/green rollout is `blueGreen`. */
export function shortFormOf(spec: RolloutSpec): string {
  if (spec.strategy === "blueGreen") return "blueGreen";
  return spec.steps
    .map((s) => {
      if (s.kind === "setWeight") return `${s.weight}%`;
      if (s.kind === "pause") return s.duration === undefined ? "pause" : `pause=${s.duration}s`;
      if (s.kind === "analysis") return "analysis";
      return s.kind;
    })
    .join(",");
}

/** A tiny upstream: the candidate and the stable both answer their readiness probe. */
async function startUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * What the samples provider's `address` points at: a pass-through to the proxy's admin listener
 * that counts the queries (`GET /compare`) for the cost, as the Prometheus forwarder counts its own.
 */
async function startSamplesCounter(
  adminUrl: string,
): Promise<{ url: string; readonly queries: number; close(): Promise<void> }> {
  let queries = 0;
  const server: Server = createServer((req, res) => {
    queries += 1;
    fetch(`${adminUrl}${req.url ?? "/"}`, { headers: { accept: "application/json" } })
      .then(async (answer) => {
        const body = await answer.text();
        res
          .writeHead(answer.status, {
            "content-type": answer.headers.get("content-type") ?? "application/json",
          })
          .end(body);
      })
      .catch((error: unknown) => {
        res
          .writeHead(502, { "content-type": "text/plain" })
          .end(`the local proxy did not answer: ${String(error)}`);
      });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get queries() {
      return queries;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const digestOf = (tag: string) => `sha256:${createHash("sha256").update(tag).digest("hex")}`;

/**
 * Runs every plan and returns one row each. Throws `SimulationInputError` for files or plans it
 * cannot simulate (the CLI exits 2).
 */
export async function simulate(options: SimulationOptions): Promise<SimulationRow[]> {
  const duration = options.durationSeconds ?? DEFAULT_DURATION;
  if (!Number.isInteger(duration) || duration < 1) {
    throw new SimulationInputError(`the duration must be a whole number of seconds >= 1, got ${duration}`);
  }
  if (!prometheusVersion()) {
    throw new SimulationInputError(
      "simulate evaluates the templates' PromQL on a real Prometheus: install the prometheus binary (apt-get install -y --no-install-recommends prometheus)",
    );
  }
  const plans = options.plans && options.plans.length > 0 ? options.plans : [undefined];
  if (plans.length > MAX_PLANS) {
    throw new SimulationInputError(
      `${plans.length} plans given, at most ${MAX_PLANS} are compared in one run: split them over several runs`,
    );
  }
  const work = options.rps * duration * plans.length;
  if (work > MAX_SIMULATED_REQUESTS) {
    const n = (x: number) => x.toLocaleString("en-US", { maximumFractionDigits: 2 });
    throw new SimulationInputError(
      `${n(options.rps)} rps × ${n(duration)} s × ${plans.length} plan${plans.length === 1 ? "" : "s"} = ${n(work)} simulated requests, more than the ${n(MAX_SIMULATED_REQUESTS)} one run sends: lower --rps, --duration or the number of plans`,
    );
  }
  // The user's files as they are, by the loader: their problems name the user's files.
  await checkUserFiles(options.files);
  const dir = mkdtempSync(join(tmpdir(), "sfn-rollouts-simulate-"));
  // Check every plan's files before starting anything.
  const placeholder = "http://127.0.0.1:9";
  const specs: RolloutSpec[] = [];
  for (const [i, plan] of plans.entries()) {
    const file = join(dir, `check-${i}.yaml`);
    writeFileSync(
      file,
      simulatedSpecText(options.files, {
        ...(plan ? { plan } : {}),
        prometheusUrl: placeholder,
        samplesUrl: placeholder,
      }),
    );
    const spec = await loadSimulatedSpec(
      file,
      `${options.files.join(", ")}${plan ? ` with --plan "${formatPlan(plan)}"` : ""}`,
    );
    const problems = unsupportedProviders(spec);
    if (problems.length > 0) throw new SimulationInputError(problems.join("\n"));
    specs.push(spec);
  }

  let clockNow = () => EPOCH;
  let prometheus: SimulatedPrometheus | undefined;
  let dynamo: LocalDynamo | undefined;
  let metered: MeteredDynamo | undefined;
  const rows: SimulationRow[] = [];
  try {
    prometheus = await startSimulatedPrometheus({ now: () => clockNow() });
    dynamo = await startDynamo("dynalite");
    metered = await meterDynamo(dynamo);
    for (const [i, plan] of plans.entries()) {
      const clock = new ManualClock(EPOCH + i * PLAN_SPACING_MS);
      clockNow = () => clock.now();
      const file = join(dir, `plan-${i}.yaml`);
      const prometheusUrl = prometheus.url;
      // Written once the plan's proxy listens: its admin URL stands for the samples router.
      const writeSpec = (samplesUrl: string) =>
        writeFileSync(
          file,
          simulatedSpecText(options.files, { ...(plan ? { plan } : {}), prometheusUrl, samplesUrl }),
        );
      const spec = specs[i] as RolloutSpec;
      rows.push(
        await runPlan({
          options,
          duration,
          file,
          writeSpec,
          label: plan ? formatPlan(plan) : shortFormOf(spec),
          spec,
          clock,
          dynamo: metered,
          prometheus,
          index: i,
        }),
      );
    }
  } finally {
    await metered?.close();
    await dynamo?.close();
    await prometheus?.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

/**
 * The plan's stack; what the construct refuses (a definition past Step Functions' size) is an
 * input error naming the plan, on one line.
 */
async function startStack(
  options: Parameters<typeof startEmbeddedStack>[0],
  label: string,
): Promise<EmbeddedStack> {
  try {
    return await startEmbeddedStack(options);
  } catch (error) {
    if (error instanceof PropsError) {
      const what = error.problems.map((p) => p.replace(/^spec: /, "")).join("; ");
      throw new SimulationInputError(`plan ${label}: ${what}`);
    }
    throw error;
  }
}

/** What a plan runs with: its files, its clock, and the services every plan of a run shares. */
interface PlanInput {
  options: SimulationOptions;
  duration: number;
  file: string;
  writeSpec: (samplesUrl: string) => void;
  label: string;
  spec: RolloutSpec;
  clock: ManualClock;
  dynamo: MeteredDynamo;
  prometheus: SimulatedPrometheus;
  index: number;
}

/** The billable work of the plan's workflow, counted as it runs: each Lambda and its milliseconds, Scheduler's deliveries. */
interface Meter {
  byHandler: Partial<Record<HandlerName, number>>;
  lambdaMs: number;
  schedulerInvocations: number;
}

/** A plan's running services: its stack, the proxy its traffic goes through, the samples counter, its meter. */
interface PlanRun {
  input: PlanInput;
  stack: EmbeddedStack;
  proxy: RunningProxy;
  samples: { readonly queries: number };
  meter: Meter;
}

/** What was counted when the candidate was pushed, so the row counts the candidate's rollout only. */
interface AtPush {
  /** The virtual time of the push: second 0 of the traffic. */
  t0: number;
  units: { read: number; write: number };
  queries: number;
  /** The executions that ran before (the stable version's). */
  executions: Set<string>;
}

/** How the candidate's rollout ended, or where it stands when the simulation ends. */
interface Decision {
  outcome: SimulationRow["outcome"];
  at: number | null;
  message: string | null;
}

/** The candidate's requests and failures and the stable's requests, over the whole plan. */
interface Totals {
  newRequests: number;
  newErrors: number;
  oldRequests: number;
}

/**
 * One plan: its own upstream, proxy and stack; the stable version released first, then the
 * candidate pushed and a virtual second of traffic at a time until it is decided or the duration
 * ends. Its row counts only the candidate's rollout.
 */
async function runPlan(input: PlanInput): Promise<SimulationRow> {
  const upstream = await startUpstream();
  const proxy = await startProxy({ now: () => input.clock.now() });
  const samples = await startSamplesCounter(proxy.adminUrl);
  const meter: Meter = { byHandler: {}, lambdaMs: 0, schedulerInvocations: 0 };
  let stack: EmbeddedStack | undefined;
  try {
    input.writeSpec(samples.url);
    stack = await startMeteredStack(input, { adminUrl: proxy.adminUrl, upstream: upstream.url }, meter);
    const run: PlanRun = { input, stack, proxy, samples, meter };
    await releaseStable(run);
    const atPush = await pushCandidate(run);
    const { decision, totals, series } = await sendTraffic(run, atPush.t0);
    await lastDecision(run, decision, atPush.t0);
    return rowOf(run, atPush, decision, totals, series);
  } finally {
    await stack?.close();
    await samples.close();
    await proxy.close();
    await upstream.close();
  }
}

/**
 * The plan's stack behind its proxy, its Lambdas and Scheduler's deliveries counted in `meter`:
 * what the workflow is billed for.
 */
async function startMeteredStack(
  input: PlanInput,
  proxy: { adminUrl: string; upstream: string },
  meter: Meter,
): Promise<EmbeddedStack> {
  const stack = await startStack(
    {
      specFiles: [input.file],
      target: localProxyTarget({
        adminUrl: proxy.adminUrl,
        readinessPath: "/healthz",
        upstreams: { "*": proxy.upstream },
      }),
      clock: input.clock,
      dynamo: input.dynamo,
      tableName: `simulate-${input.index}`,
      wrap: (name, handler) => async (event, context) => {
        meter.byHandler[name] = (meter.byHandler[name] ?? 0) + 1;
        const started = performance.now();
        try {
          return await handler(event, context);
        } finally {
          meter.lambdaMs += Math.max(1, Math.ceil(performance.now() - started));
        }
      },
    },
    input.label.length > 60 ? `${input.label.slice(0, 60)}…` : input.label,
  );
  const scheduler = stack.runtime.scheduler;
  const deliver = scheduler.deliver.bind(scheduler);
  scheduler.deliver = async (firing) => {
    const delivered = await deliver(firing);
    if (delivered) meter.schedulerInvocations++;
    return delivered;
  };
  return stack;
}

/** The rollout as it is stored; the simulation's own reads are not the workflow's, so they are not billed. */
async function readItem(run: PlanRun): Promise<RolloutItem | undefined> {
  const dynamo = run.input.dynamo;
  dynamo.paused = true;
  try {
    return await run.stack.item();
  } finally {
    dynamo.paused = false;
  }
}

/**
 * The stable version first: a first revision skips the steps and is promoted at once. Whatever
 * its promotion left scheduled (its scale-down) runs before the candidate's push.
 */
async function releaseStable(run: PlanRun): Promise<void> {
  const runtime = run.stack.runtime;
  await run.stack.push(STABLE_TAG, digestOf(STABLE_TAG));
  for (let i = 0; ; i++) {
    await runtime.settle();
    const item = await readItem(run);
    if (item?.phase === "Healthy" && item.stableRevision?.tag === STABLE_TAG) break;
    if (i > 600) throw new Error(`the stable version ${STABLE_TAG} did not become Healthy: ${item?.phase}`);
    await runtime.advanceBy(1000);
  }
  await runtime.runUntilIdle();
}

/**
 * Pushes the candidate at the next whole second, with the meter reset and the counts it cannot
 * reset (DynamoDB's units, the provider's queries, the executions so far) kept as they were.
 */
async function pushCandidate(run: PlanRun): Promise<AtPush> {
  const { stack, meter } = run;
  const t0 = Math.ceil(run.input.clock.now() / 1000) * 1000 + 1000;
  await stack.runtime.advanceTo(t0);
  for (const key of Object.keys(meter.byHandler)) delete meter.byHandler[key as HandlerName];
  meter.lambdaMs = 0;
  meter.schedulerInvocations = 0;
  const atPush: AtPush = {
    t0,
    units: { ...run.input.dynamo.units },
    queries: run.input.prometheus.counts.queries + run.samples.queries,
    executions: new Set(executionsOf(stack)),
  };
  await stack.push(CANDIDATE_TAG, digestOf(CANDIDATE_TAG));
  return atPush;
}

/** The simulated users: how many requests each second brings, how each version answers, and the pods when modelled. */
interface Users {
  requests: RequestClock;
  metrics: ServiceMetrics;
  /** The candidate's behaviour. */
  bad: Behaviour;
  /** The stable's behaviour. */
  good: Behaviour;
  pods: PodModel | undefined;
}

/** The users the options describe; the seed and the plan's index make each plan's draws its own. */
function usersOf(input: PlanInput): Users {
  const { options } = input;
  const requests = new RequestClock(options.rps);
  const metrics = new ServiceMetrics(((options.seed ?? 0) * 0x9e3779b1 + input.index) >>> 0);
  const bad: Behaviour = {
    errorRate: options.errorRate,
    latencyMedian: STABLE.latencyMedian * (options.latencyFactor ?? 1),
    latencySigma: STABLE.latencySigma,
  };
  const good: Behaviour = { ...STABLE, errorRate: options.baselineErrorRate ?? 0 };
  const pods =
    options.replicas === undefined
      ? undefined
      : new PodModel(options.replicas, input.spec.maxSurge, options.readyDelay ?? 0);
  return { requests, metrics, bad, good, pods };
}

/**
 * The traffic loop: each virtual second, the rollout's state when a timer was due (an abort ends
 * the loop, a promotion too when only outcomes count), then that second's requests split by the
 * candidate's share, and the resulting series written to Prometheus at the second's end.
 */
async function sendTraffic(
  run: PlanRun,
  t0: number,
): Promise<{ decision: Decision; totals: Totals; series: SecondRecord[] }> {
  const { options, duration } = run.input;
  const runtime = run.stack.runtime;
  const users = usersOf(run.input);
  let split = new ExactSplit(0, 1);
  const decision: Decision = { outcome: "running", at: null, message: null };
  const series: SecondRecord[] = [];
  const totals: Totals = { newRequests: 0, newErrors: 0, oldRequests: 0 };
  // The item changes only when something runs: the push, then timers. A second in which no
  // timer was due is not read back (the state and the weights are those of the second before).
  let changed = true;
  for (let t = 0; t < duration; t++) {
    const due = runtime.timer.nextDueAt();
    if (due !== undefined && due <= t0 + t * 1000) changed = true;
    await runtime.advanceTo(t0 + t * 1000);
    const item = changed ? await readItem(run) : undefined;
    if (changed && undecided(decision) && observe(decision, item, t, options.untilDecided)) break;
    changed = false;
    const share = candidateShare(run.proxy, users.pods, t);
    if (!split.same(share.numerator, share.denominator)) {
      split = new ExactSplit(share.numerator, share.denominator);
    }
    const record = serveSecond(run.proxy, users, split, t, share);
    totals.newRequests += record.newRequests;
    totals.newErrors += record.newErrors;
    totals.oldRequests += record.oldRequests;
    run.input.prometheus.append(users.metrics.sample(t0 + (t + 1) * 1000));
    if (options.series) series.push(record);
  }
  return { decision, totals, series };
}

/** Still running or paused: a later state can decide it. */
function undecided(decision: Decision): boolean {
  return decision.outcome === "running" || decision.outcome === "paused";
}

/**
 * Records what the rollout's state at second `t` decides: an abort, a promotion, or a pause (the
 * first). True when the simulation stops there: at an abort, and at a promotion when only
 * outcomes count.
 */
function observe(
  decision: Decision,
  item: RolloutItem | undefined,
  t: number,
  untilDecided: boolean | undefined,
): boolean {
  if (item?.phase === "Degraded") {
    decision.outcome = "aborted";
    decision.at = t;
    decision.message = item.message ?? null;
    return true;
  }
  if (item?.phase === "Healthy" && item.stableRevision?.tag === CANDIDATE_TAG) {
    decision.outcome = "promoted";
    decision.at = t;
    return Boolean(untilDecided);
  }
  if (item?.phase === "Paused" && decision.outcome !== "paused") {
    decision.outcome = "paused";
    decision.at = t;
    decision.message = item.message ?? null;
  }
  return false;
}

/**
 * The candidate's weight at the proxy and the share of the users it meets: everyone once it is
 * promoted; before, the weight, or with modelled pods its share of the ready ones.
 */
function candidateShare(
  proxy: RunningProxy,
  pods: PodModel | undefined,
  t: number,
): { weight: number; numerator: number; denominator: number } {
  const config = proxy.config();
  const stableIsNew = config?.stableVersion === CANDIDATE_TAG;
  const weight = stableIsNew
    ? 100
    : config?.canary && config.canaryVersion === CANDIDATE_TAG
      ? config.weight
      : 0;
  if (stableIsNew) return { weight, numerator: 1, denominator: 1 };
  if (pods) {
    const ready = pods.at(weight, t);
    return { weight, numerator: ready.canary, denominator: Math.max(1, ready.canary + ready.stable) };
  }
  return { weight, numerator: weight, denominator: 100 };
}

/** One second's requests: each sent to the candidate or the stable by the split, served, and recorded. */
function serveSecond(
  proxy: RunningProxy,
  users: Users,
  split: ExactSplit,
  t: number,
  share: { weight: number; numerator: number; denominator: number },
): SecondRecord {
  const record: SecondRecord = {
    t,
    weight: share.weight,
    share: share.numerator / share.denominator,
    newRequests: 0,
    newErrors: 0,
    oldRequests: 0,
    oldErrors: 0,
  };
  for (let n = users.requests.next(); n > 0; n--) {
    const toNew = split.next();
    const version = toNew ? CANDIDATE_TAG : STABLE_TAG;
    const { failed, code, seconds } = users.metrics.serve(version, toNew ? users.bad : users.good);
    // The proxy's own recorder, at this virtual second: what the samples provider reads.
    proxy.record(version, code, seconds);
    if (toNew) {
      record.newRequests++;
      if (failed) record.newErrors++;
    } else {
      record.oldRequests++;
      if (failed) record.oldErrors++;
    }
  }
  return record;
}

/** The last second's decision, if any, when the traffic ended with the rollout undecided. */
async function lastDecision(run: PlanRun, decision: Decision, t0: number): Promise<void> {
  if (!undecided(decision)) return;
  const duration = run.input.duration;
  await run.stack.runtime.advanceTo(t0 + duration * 1000);
  const item = await readItem(run);
  if (item?.phase === "Degraded") {
    decision.outcome = "aborted";
    decision.at = duration;
    decision.message = item.message ?? null;
  } else if (
    decision.outcome === "running" &&
    item?.phase === "Healthy" &&
    item.stableRevision?.tag === CANDIDATE_TAG
  ) {
    decision.outcome = "promoted";
    decision.at = duration;
  }
}

/** The plan's row: its decision, the requests the candidate met, and the work its rollout was billed for. */
function rowOf(
  run: PlanRun,
  atPush: AtPush,
  decision: Decision,
  totals: Totals,
  series: SecondRecord[],
): SimulationRow {
  const { options, dynamo, prometheus } = run.input;
  const { byHandler } = run.meter;
  const total = totals.newRequests + totals.oldRequests;
  const transitions = stateTransitions(run.stack, atPush.executions);
  const counts: RunCounts = {
    rolloutTransitions: transitions.rollout,
    tickerTransitions: transitions.other,
    tickerExecutions: transitions.express,
    tickerBilledMs: transitions.expressBilledMs,
    lambdaInvocations: Object.values(byHandler).reduce((a, b) => a + (b ?? 0), 0),
    lambdaMs: run.meter.lambdaMs,
    ticks: byHandler.resume ?? 0,
    dynamoReadUnits: dynamo.units.read - atPush.units.read,
    dynamoWriteUnits: dynamo.units.write - atPush.units.write,
    schedulerInvocations: run.meter.schedulerInvocations,
    providerQueries: prometheus.counts.queries + run.samples.queries - atPush.queries,
    byHandler: { ...byHandler },
  };
  return {
    plan: run.input.label,
    outcome: decision.outcome,
    at: decision.at,
    message: decision.message,
    newRequests: totals.newRequests,
    newErrors: totals.newErrors,
    totalRequests: total,
    share: total === 0 ? 0 : totals.newRequests / total,
    counts,
    cost: { total: costOf(counts).total, waitLoop: waitLoopCost(counts).total },
    ...(options.series ? { series } : {}),
  };
}

/** Every execution of every state machine of the stack, by ARN. */
function executionsOf(stack: EmbeddedStack): string[] {
  return stack.runtime.sfn
    .listStateMachines()
    .flatMap((m) => stack.runtime.sfn.listExecutions({ stateMachineArn: m.stateMachineArn }))
    .map((e) => e.executionArn);
}

/**
 * What the executions started since `before` are billed for: the state transitions of the
 * rollout's and of any other Standard state machine; an Express state machine's (the ticker's)
 * executions and their duration in virtual time, each rounded up to Express's 100 ms.
 */
function stateTransitions(
  stack: EmbeddedStack,
  before: Set<string>,
): { rollout: number; other: number; express: number; expressBilledMs: number } {
  const out = { rollout: 0, other: 0, express: 0, expressBilledMs: 0 };
  for (const machine of stack.runtime.sfn.listStateMachines()) {
    for (const execution of stack.runtime.sfn.listExecutions({ stateMachineArn: machine.stateMachineArn })) {
      if (before.has(execution.executionArn)) continue;
      if (machine.type === "EXPRESS") {
        const ms = (execution.stopDate ?? stack.runtime.clock.now()) - execution.startDate;
        out.express++;
        out.expressBilledMs += Math.max(1, Math.ceil(ms / EXPRESS_BILLING_STEP_MS)) * EXPRESS_BILLING_STEP_MS;
        continue;
      }
      const n = stack.runtime.sfn
        .getExecutionHistory(execution.executionArn)
        .filter((e) => e.type.endsWith("StateEntered")).length;
      if (machine.stateMachineArn === stack.stateMachineArn) out.rollout += n;
      else out.other += n;
    }
  }
  return out;
}
