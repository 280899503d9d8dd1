import { AsyncLocalStorage } from "node:async_hooks";
import type { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import type { SageMakerClient } from "@aws-sdk/client-sagemaker";
import type { SFNClient } from "@aws-sdk/client-sfn";
import { mulberry32, type Prng } from "../../functions/judges/simulate.ts";
import type { MetricProvider, ProviderAnswer } from "../../functions/metrics/port.ts";
import { StoreUnavailableError } from "../../functions/store/errors.ts";
import type { RolloutStore } from "../../functions/store/port.ts";
import type { FiringHandler, InProcessTimer } from "../../functions/timer/in-process.ts";
import { type Timer, TimerError } from "../../functions/timer/port.ts";
import type { FacadeInterceptor } from "../../local/aws/facade.ts";
import type { LambdaHandler } from "../../local/aws/lambda.ts";
import { AwsApiError } from "../../local/aws/protocol.ts";

/**
 * The faults a soak injects, each at the rate given for it. Each draw comes from a stream of its
 * own, keyed by the rollout the call is for, the call (`DynamoDB.PutItem`, `Lambda.Invoke
 * advance`, …) and the fault kind, and seeded from the run's seed and that key: the n-th such call
 * of a rollout gets the same answer in every run of a seed, whatever order the runtime's I/O puts
 * the fleet's calls in. Where each one enters:
 *
 * - `throttle-sfn`, `throttle-events`: the façade answers a Step Functions or EventBridge call with
 *   `ThrottlingException` (HTTP 400, the AWS JSON protocol), so the SDK client retries it as it
 *   does on AWS and the adapter sees what is left.
 * - `throttle-dynamodb`: a store call fails as the DynamoDB adapter fails once the SDK's own
 *   retries are spent: `StoreUnavailableError` caused by `ProvisionedThroughputExceededException`.
 * - `throttle-scheduler`: a Timer call fails as the Scheduler adapter fails after the SDK's
 *   retries: `TimerError` caused by `ThrottlingException`.
 * - `throttle-lambda`: the Lambda service refuses a Task's invoke (`Lambda.TooManyRequestsException`).
 * - `throttle-sagemaker`, `sagemaker-5xx`: the façade answers a SageMaker control-plane call (a
 *   model rollout's target) with `ThrottlingException` (HTTP 400) or `ServiceUnavailable` (HTTP
 *   503), so the SDK client retries it as it does on AWS and the target sees what is left.
 * - `crash-before`, `crash-after`, `timeout-after`: a function's process dies before it runs
 *   (`Runtime.ExitError`), or after its writes (`Runtime.ExitError`, `Sandbox.Timedout`): its
 *   result is lost and Step Functions sees the error.
 * - `timer-duplicate`, `timer-late`: a Timer firing is delivered twice, or 90 s late.
 * - `provider-5xx`, `provider-timeout`, `provider-nan`: a metric query answers HTTP 503, times
 *   out, or returns NaN.
 * - `race`: another writer updates the rollout item (same content, next version) just before a
 *   conditional write, so the write loses a real race.
 */
export const FAULT_KINDS = [
  "throttle-sfn",
  "throttle-events",
  "throttle-dynamodb",
  "throttle-scheduler",
  "throttle-lambda",
  "throttle-sagemaker",
  "sagemaker-5xx",
  "crash-before",
  "crash-after",
  "timeout-after",
  "timer-duplicate",
  "timer-late",
  "provider-5xx",
  "provider-timeout",
  "provider-nan",
  "race",
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** How late a `timer-late` firing is delivered. */
export const LATE_FIRING_MS = 90_000;

/** Reads `--faults` style text: `all`, `none`, or kinds separated by commas; refuses an unknown kind by name. */
export function parseFaultKinds(text: string): FaultKind[] {
  const trimmed = text.trim();
  if (trimmed === "all") return [...FAULT_KINDS];
  if (trimmed === "none" || trimmed === "") return [];
  const known = new Set<string>(FAULT_KINDS);
  return trimmed.split(",").map((raw) => {
    const kind = raw.trim();
    if (!known.has(kind))
      throw new RangeError(`unknown fault kind "${kind}" (known: ${FAULT_KINDS.join(", ")})`);
    return kind as FaultKind;
  });
}

/** One injected fault, where and when (virtual ms). */
export interface InjectedFault {
  kind: FaultKind;
  where: string;
  at: number;
}

/** The soak's rollouts are named `svc-0000`, `svc-0001`, …: a call is for the first such name it mentions. */
export const ROLLOUT_NAME = /svc-\d{4}/;

/** The header the soak's SDK clients name the rollout a call is made for in. */
export const ROLLOUT_HEADER = "x-soak-rollout";

/** FNV-1a, 32 bits: a stream's seed from its key. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Draws faults at `rate` for the enabled kinds, counts calls per API, and records every fault. */
export class FaultPlan {
  readonly #streams = new Map<string, Prng>();
  /** The rollout the work in progress is for (a handler's invocation, a push, an operator's command). */
  readonly #rollout = new AsyncLocalStorage<string>();
  readonly #enabled: Set<FaultKind>;
  readonly injected: InjectedFault[] = [];
  /** Calls per API operation (`AWSStepFunctions.SendTaskSuccess`, `DynamoDB.save`, …). */
  readonly calls = new Map<string, number>();

  constructor(
    readonly options: { seed: number; rate: number; kinds: readonly FaultKind[]; now: () => number },
  ) {
    if (!(options.rate >= 0 && options.rate <= 1))
      throw new RangeError(`fault rate must be in [0, 1], got ${options.rate}`);
    this.#enabled = new Set(options.kinds);
  }

  count(api: string): void {
    this.calls.set(api, (this.calls.get(api) ?? 0) + 1);
  }

  /** The stream of `key`, seeded from the run's seed and the key. */
  #stream(key: string): Prng {
    let stream = this.#streams.get(key);
    if (stream === undefined) {
      stream = mulberry32(hash(`${this.options.seed}|${key}`));
      this.#streams.set(key, stream);
    }
    return stream;
  }

  /** The rollout a call is for: the one `about` names, else the one the work in progress is for. */
  #rolloutOf(about: string): string {
    return ROLLOUT_NAME.exec(about)?.[0] ?? this.#rollout.getStore() ?? "fleet";
  }

  /**
   * Whether to inject `kind` into this `call` now, `about` naming what it is for (always draws,
   * so enabling a kind shifts nothing else).
   */
  draw(kind: FaultKind, call: string, about = ""): boolean {
    const rollout = this.#rolloutOf(about);
    const hit = this.#stream(`${rollout}|${call}|${kind}`)() < this.options.rate;
    if (!hit || !this.#enabled.has(kind)) return false;
    const where = about === "" ? `${call} ${rollout}` : `${call} ${about}`;
    this.injected.push({ kind, where, at: this.options.now() });
    return true;
  }

  /** Runs `work` for `rollout`: the calls it makes without naming a rollout are that rollout's. */
  within<T>(rollout: string, work: () => T): T {
    return this.#rollout.run(rollout, work);
  }

  /** The engine's jitter source for one execution: a stream of its own, keyed by its ARN. */
  random(executionArn: string): Prng {
    return this.#stream(`engine|${executionArn}`);
  }

  /** Makes `client` name, in `ROLLOUT_HEADER`, the rollout each of its calls is made for. */
  tag(client: SFNClient | EventBridgeClient | SageMakerClient): void {
    const rollout = this.#rollout;
    (client as SFNClient).middlewareStack.add(
      (next) => async (args) => {
        const name = rollout.getStore();
        const request = args.request as { headers?: Record<string, string> };
        if (name !== undefined && request.headers !== undefined) request.headers[ROLLOUT_HEADER] = name;
        return next(args);
      },
      { step: "build", name: "soakRollout" },
    );
  }

  /**
   * The façade's interceptor: counts every call, throttles Step Functions, EventBridge and
   * SageMaker calls, and answers SageMaker calls 503.
   */
  interceptor(): FacadeInterceptor {
    return ({ api, operation, headers }) => {
      const name = `${api}.${operation}`;
      this.count(name);
      const kind =
        api === "AWSStepFunctions"
          ? "throttle-sfn"
          : api === "AWSEvents"
            ? "throttle-events"
            : api === "SageMaker"
              ? "throttle-sagemaker"
              : undefined;
      const header = headers[ROLLOUT_HEADER];
      const rollout = typeof header === "string" ? header : "";
      if (kind !== undefined && this.draw(kind, name, rollout))
        return new AwsApiError("ThrottlingException", "Rate exceeded", 400);
      if (api === "SageMaker" && this.draw("sagemaker-5xx", name, rollout))
        return new AwsApiError("ServiceUnavailable", "Service is unavailable, please try again", 503);
      return undefined;
    };
  }

  /** The store, failing as DynamoDB does when throttled, and losing races on writes. */
  store(inner: RolloutStore): RolloutStore {
    const throttled = (operation: string, key: string) => {
      const cause = new Error("The level of configured provisioned throughput for the table was exceeded.");
      cause.name = "ProvisionedThroughputExceededException";
      return new StoreUnavailableError(operation, key, { cause });
    };
    const guard = <T>(operation: string, key: string, call: () => Promise<T>): Promise<T> => {
      this.count(`DynamoDB.${operation}`);
      if (this.draw("throttle-dynamodb", `DynamoDB.${operation}`, key))
        return Promise.reject(throttled(operation, key));
      return call();
    };
    return {
      get: (name, options) => guard("GetItem", name, () => inner.get(name, options)),
      list: () => guard("Query", "rollouts", () => inner.list()),
      save: (item, expectedVersion) =>
        guard("PutItem", item.name, async () => {
          if (expectedVersion !== null && this.draw("race", "DynamoDB.PutItem", item.name)) {
            const current = await inner.get(item.name);
            if (current !== undefined) await inner.save(current, current.version);
          }
          return inner.save(item, expectedVersion);
        }),
      getRun: (rollout, runId, schema) =>
        guard("GetItem", `${rollout}/${runId}`, () => inner.getRun(rollout, runId, schema)),
      saveRun: (rollout, runId, run, expectedVersion, options) =>
        guard("PutItem", `${rollout}/${runId}`, () =>
          inner.saveRun(rollout, runId, run, expectedVersion, options),
        ),
      listRuns: (rollout, schema, options) =>
        guard("Query", `${rollout}/runs`, () => inner.listRuns(rollout, schema, options)),
      putMeasurement: (input) =>
        guard("PutItem", `${input.rollout}/${input.runId}/${input.measurementId}`, () =>
          inner.putMeasurement(input),
        ),
      listMeasurements: (rollout, runId, schema, options) =>
        guard("Query", `${rollout}/${runId}/measurements`, () =>
          inner.listMeasurements(rollout, runId, schema, options),
        ),
    };
  }

  /** The Timer, failing as the Scheduler adapter does when throttled. */
  timer(inner: Timer): Timer {
    const throttled = (operation: string, key: string) => {
      const cause = new Error("Rate exceeded");
      cause.name = "ThrottlingException";
      return new TimerError(`${operation} failed`, key, { cause });
    };
    return {
      schedule: async (request) => {
        this.count("Scheduler.CreateSchedule");
        if (this.draw("throttle-scheduler", "Scheduler.CreateSchedule", request.key))
          throw throttled("CreateSchedule", request.key);
        return inner.schedule(request);
      },
      cancel: async (key) => {
        this.count("Scheduler.DeleteSchedule");
        if (this.draw("throttle-scheduler", "Scheduler.DeleteSchedule", key))
          throw throttled("DeleteSchedule", key);
        return inner.cancel(key);
      },
    };
  }

  /** A function's handler, refused by the Lambda service, crashing or timing out around its work. */
  handler(name: string, inner: LambdaHandler): LambdaHandler {
    const fail = (errorName: string, message: string) => {
      const error = new Error(message);
      error.name = errorName;
      return error;
    };
    const call = `Lambda.Invoke ${name}`;
    return async (event, context) => {
      this.count(call);
      const rollout = this.#rolloutOf(JSON.stringify(event ?? null));
      return this.within(rollout, async () => {
        if (this.draw("throttle-lambda", call, rollout))
          throw fail("Lambda.TooManyRequestsException", "Rate Exceeded.");
        if (this.draw("crash-before", call, rollout))
          throw fail(
            "Runtime.ExitError",
            "RequestId: local Error: Runtime exited with error: signal: killed",
          );
        const result = await inner(event, context);
        if (this.draw("crash-after", call, rollout))
          throw fail(
            "Runtime.ExitError",
            "RequestId: local Error: Runtime exited with error: signal: killed",
          );
        if (this.draw("timeout-after", call, rollout))
          throw fail("Sandbox.Timedout", "Task timed out after 60.00 seconds");
        return result;
      });
    };
  }

  /** Timer firings delivered twice, or late (rescheduled on `timer` under a new key). */
  firings(timer: InProcessTimer, deliver: FiringHandler): FiringHandler {
    const LATE = "soak-late/";
    return async (firing) => {
      if (firing.key.startsWith(LATE)) {
        await deliver(firing.payload as Parameters<FiringHandler>[0]);
        return;
      }
      const about = `${firing.key} ${this.#rolloutOf(JSON.stringify(firing.payload ?? null))}`;
      if (this.draw("timer-late", "Timer.fire", about)) {
        await timer.schedule({
          key: `${LATE}${firing.key}`,
          at: this.options.now() + LATE_FIRING_MS,
          payload: firing,
        });
        return;
      }
      await deliver(firing);
      if (this.draw("timer-duplicate", "Timer.fire", about)) await deliver(firing);
    };
  }

  /** A provider answering 503, timing out or returning NaN at the plan's rate. */
  provider(inner: MetricProvider): MetricProvider {
    return {
      ...(inner.resume ? { resume: inner.resume.bind(inner) } : {}),
      measure: async (metric, ctx): Promise<ProviderAnswer> => {
        this.count("Provider.query");
        if (this.draw("provider-5xx", "Provider.query", metric.name))
          return { ok: false, message: "HTTP 503 Service Unavailable: upstream overloaded" };
        if (this.draw("provider-timeout", "Provider.query", metric.name))
          return { ok: false, message: "query timed out after 10000 ms" };
        if (this.draw("provider-nan", "Provider.query", metric.name))
          return { ok: true, result: [Number.NaN], value: "[NaN]" };
        return inner.measure(metric, ctx);
      },
    };
  }
}
