import { SFNClient } from "@aws-sdk/client-sfn";
import type { TaskTokens, TokenDelivery } from "../../functions/abort/task-tokens.ts";
import { ManualClock } from "../../functions/clock.ts";
import { MetricProviders } from "../../functions/metrics/index.ts";
import { WebMetricProvider } from "../../functions/metrics/web.ts";
import { MemoryRolloutStore } from "../../functions/store/memory.ts";
import { type Executions, SfnExecutions } from "../../functions/trigger/executions.ts";
import type { OperateDeps } from "../../functions/workflow/operate.ts";
import { DEMO_VERSIONS } from "../../local/demo/main.ts";
import { writeDemoSpec } from "../../local/demo/spec.ts";
import { loadRollout } from "../../statemachine/load.ts";
import { type EmbeddedRollout, startEmbeddedRollout, T0 } from "./embedded-rollout.ts";
import { digest } from "./fake-rollout.ts";
import { FakeTraffic } from "./traffic.ts";

/**
 * The demo's rollouts (`npm start`) in the embedded runtime, in virtual time, for the dashboard's
 * and the report's tests and screenshots: the demo's own spec files (`writeDemoSpec`: 25%,
 * `success-rate`, 50%, a pause, `success-rate` and the `errors-vs-stable` gate) read through the
 * loader, the shipped handlers, and the real web provider over a traffic model in place of the
 * proxy: each version fails its demo share of requests (v1 and v2 1%, v3 50%, v4 3%) at 100
 * requests per second per side. So the outcomes are the demo's: v1 and v2 promoted, v3 aborted by
 * the threshold, v4 rolled back by the gate.
 *
 * `demo` runs the four pushes; `demo-approval` is the same rollout with a pause that waits for a
 * person, stopped there with v2. Both write one store (one table); the dashboard's Step Functions
 * ports send each call to the runtime that runs the execution it names.
 */
export interface DemoRollouts {
  store: MemoryRolloutStore;
  clock: ManualClock;
  demo: EmbeddedRollout;
  approval: EmbeddedRollout;
  /** The execution of `demo-approval` waiting at its pause. */
  approvalExecution: string;
  /** What the dashboard and the operating commands are given. */
  deps: OperateDeps;
  close(): Promise<void>;
}

const ERROR_RATE: Record<string, number> = Object.fromEntries(DEMO_VERSIONS);
/** Requests per second each version serves, in the traffic model. */
const RPS = 100;
const STATS = "http://demo-proxy.invalid:9";

/** The proxy's `/admin/stats?version=V&window=S` answer, from the traffic model. */
function demoStats(input: string): Promise<Response> {
  const query = new URL(input).searchParams;
  const rate = ERROR_RATE[query.get("version") ?? ""];
  const window = Number(query.get("window"));
  if (rate === undefined || !Number.isFinite(window)) {
    return Promise.resolve(new Response(JSON.stringify({ error: "unknown version" }), { status: 400 }));
  }
  const requests = Math.round(RPS * window);
  const ok = requests - Math.round(requests * rate);
  const successRate = requests === 0 ? null : ok / requests;
  const body = { requests, ok, successRate, result: successRate === null ? [] : [successRate] };
  return Promise.resolve(
    new Response(JSON.stringify(body), { status: 200, headers: { "content-type": "application/json" } }),
  );
}

async function demoRollout(
  name: string,
  store: MemoryRolloutStore,
  clock: ManualClock,
  pause?: string,
): Promise<EmbeddedRollout> {
  const files = writeDemoSpec(
    { kind: "proxy", url: STATS },
    { name, judge: { samples: 1500 }, ...(pause ? { pause } : {}) },
  );
  const { spec } = await loadRollout(files);
  return startEmbeddedRollout({
    spec,
    router: new FakeTraffic(),
    providers: new MetricProviders({ web: new WebMetricProvider({ fetch: demoStats }) }),
    clock,
    store,
  });
}

/** Sends a token to each runtime in turn: only the one that issued it takes it. */
function routedTokens(...all: TaskTokens[]): TaskTokens {
  const first = async (send: (t: TaskTokens) => Promise<TokenDelivery>) => {
    let last: TokenDelivery = { delivered: false, reason: "TaskDoesNotExist", message: "no runtime" };
    for (const tokens of all) {
      last = await send(tokens);
      if (last.delivered) return last;
    }
    return last;
  };
  return {
    sendSuccess: (token, output) => first((t) => t.sendSuccess(token, output)),
    sendFailure: (token, error, cause) => first((t) => t.sendFailure(token, error, cause)),
  };
}

export async function startDemoRollouts(): Promise<DemoRollouts> {
  const clock = new ManualClock(T0);
  const store = new MemoryRolloutStore({ clock });
  const demo = await demoRollout("demo", store, clock);
  const approval = await demoRollout("demo-approval", store, clock, "{}");
  try {
    const expected = ["Healthy", "Healthy", "Aborted", "Aborted"];
    for (const [n, [tag]] of DEMO_VERSIONS.entries()) {
      const ending = await demo.rollOut({ digest: digest(n + 1), tag });
      if (ending.state !== expected[n]) throw new Error(`demo ${tag}: ${JSON.stringify(ending)}`);
      await demo.idle();
      clock.advance(5_000);
    }
    if ((await approval.rollOut({ digest: digest(1), tag: "v1" })).state !== "Healthy")
      throw new Error("demo-approval v1 was not promoted");
    await approval.idle();
    const approvalExecution = approval.executionArnOf(await approval.push({ digest: digest(2), tag: "v2" }));
    const waiting = await approval.run(approvalExecution);
    if (waiting.state !== "Waiting")
      throw new Error(`demo-approval v2 did not wait: ${JSON.stringify(waiting)}`);
    const clients = [demo, approval].map(
      (r) =>
        new SFNClient({
          endpoint: r.runtime.facadeUrl,
          region: "us-east-1",
          credentials: { accessKeyId: "local", secretAccessKey: "local" },
        }),
    );
    const byMachine = new Map<string, Executions>([
      [demo.stateMachineArn, new SfnExecutions(clients[0] as SFNClient)],
      [approval.stateMachineArn, new SfnExecutions(clients[1] as SFNClient)],
    ]);
    const executions: Executions = {
      start: (request) => {
        const target = byMachine.get(request.stateMachineArn);
        return target
          ? target.start(request)
          : Promise.reject(new Error(`no state machine ${request.stateMachineArn}`));
      },
    };
    return {
      store,
      clock,
      demo,
      approval,
      approvalExecution,
      deps: { store, clock, tokens: routedTokens(approval.tokens, demo.tokens), executions },
      close: async () => {
        for (const client of clients) client.destroy();
        await demo.close();
        await approval.close();
      },
    };
  } catch (error) {
    await demo.close();
    await approval.close();
    throw error;
  }
}
