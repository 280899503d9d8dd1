import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { SFNClient } from "@aws-sdk/client-sfn";
import { runWithEnv } from "@sfn-rollouts/test-support/cli";
import { listExecutions } from "@sfn-rollouts/test-support/executions";
import { DEAD_URL } from "@sfn-rollouts/test-support/http-server";
import { ManualClock } from "../../functions/clock.ts";
import { startDemoApp } from "../../local/demo/app.ts";
import { writeDemoSpec } from "../../local/demo/spec.ts";
import type { LocalDynamo } from "../../local/dynamo.ts";
import { startProxy } from "../../local/proxy/server.ts";
import { localProxyTarget } from "../../local/proxy/target.ts";
import { CLI_ENV_KEYS, type EmbeddedStack, startEmbeddedStack } from "../../local/stack.ts";
import { DIGESTS, ERROR_RATES, type Scenario, type ScenarioOptions, type Tag } from "./scenario.ts";

/** A scenario on the embedded runtime: the generic one, plus the stack for benchmarks. */
export interface LocalScenario extends Scenario {
  stack: EmbeddedStack;
  clock: ManualClock;
}

export interface LocalScenarioOptions extends ScenarioOptions {
  dynamo: LocalDynamo;
  tableName: string;
}

/**
 * One rollout on the synthesized stack, in virtual time: three real demo services behind the
 * real local proxy (whose samples follow the virtual clock), the reference canary judged by the
 * proxy's own samples, the real handlers and SDK clients against the embedded runtime.
 */
export async function startScenario(options: LocalScenarioOptions): Promise<LocalScenario> {
  const clock = new ManualClock(Date.parse("2026-11-30T12:00:00Z"));
  const apps = {} as Record<Tag, Awaited<ReturnType<typeof startDemoApp>>>;
  for (const [version, errorRate] of Object.entries(ERROR_RATES) as Array<[Tag, number]>) {
    apps[version] = await startDemoApp({ version, errorRate });
  }
  const proxy = await startProxy({ now: () => clock.now() });
  const dead = DEAD_URL;
  const padding = options.answerPadding
    ? await startPadding(proxy.adminUrl, options.answerPadding)
    : undefined;
  const metricsUrl = options.providerDown ? dead : (padding?.url ?? proxy.adminUrl);
  const stack = await startEmbeddedStack({
    specFiles: [
      ...writeDemoSpec(
        { kind: "proxy", url: metricsUrl },
        {
          ...(options.pause ? { pause: options.pause } : {}),
          ...(options.count ? { count: options.count } : {}),
          ...(options.background ? { background: options.background } : {}),
          ...(options.annotations ? { annotations: options.annotations } : {}),
          ...(options.judge
            ? {
                judge: {
                  ...options.judge,
                  ...(options.judgeDown ? { metrics: { kind: "proxy" as const, url: dead } } : {}),
                },
              }
            : {}),
        },
      ),
      ...(options.extraSpecFiles ?? []),
    ],
    target: localProxyTarget({
      adminUrl: proxy.adminUrl,
      readinessPath: "/healthz",
      upstreams: Object.fromEntries(Object.entries(apps).map(([v, app]) => [v, app.url])),
    }),
    clock,
    dynamo: options.dynamo,
    tableName: options.tableName,
    ...(options.wrap ? { wrap: options.wrap } : {}),
    ...(options.notifications ? { notifications: options.notifications } : {}),
    ...(options.hookFunctions ? { hookFunctions: options.hookFunctions } : {}),
  });
  const sfn = new SFNClient({
    endpoint: stack.env.AWS_ENDPOINT_URL_SFN,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  const scenario: LocalScenario = {
    stack,
    proxy,
    apps,
    clock,
    sfn,
    stateMachineArn: stack.stateMachineArn,
    name: stack.rollout,
    push: (tag, at) => stack.push(tag, DIGESTS[tag], at),
    idle: (ms) => stack.runtime.advanceBy(ms),
    item: () => stack.item(),
    drive: async (done, o = {}) => {
      const rps = o.rps ?? 20;
      const max = o.maxSeconds ?? 300;
      for (let s = 0; s < max; s++) {
        await stack.runtime.settle();
        const item = await stack.item();
        if (done(item)) return item;
        await Promise.all(
          Array.from({ length: rps }, () =>
            fetch(`${proxy.url}/checkout`).then(
              (r) => r.arrayBuffer(),
              () => undefined,
            ),
          ),
        );
        await stack.runtime.advanceBy(1000);
      }
      return stack.item();
    },
    cli: (...argv) => runWithEnv(Object.fromEntries(CLI_ENV_KEYS.map((k) => [k, stack.env[k]])), ...argv),
    lifecycle: () =>
      stack.runtime.bus.events
        .filter((e) => e.event.source === "sfn-rollouts")
        .map((e) => ({ type: e.event["detail-type"], detail: e.event.detail as Record<string, unknown> })),
    executions: () => listExecutions(sfn, stack.stateMachineArn),
    close: async () => {
      sfn.destroy();
      await stack.close();
      await padding?.close();
      await proxy.close();
      for (const app of Object.values(apps)) await app.close();
    },
  };
  return scenario;
}

/**
 * A metrics endpoint in front of the proxy whose `/admin/stats` answers carry `bytes` more: the
 * proxy's `result` (`[rate]`) becomes `[rate, "xxx…"]`, so conditions on `result[0]` still decide.
 */
async function startPadding(
  upstream: string,
  bytes: number,
): Promise<{ url: string; close(): Promise<void> }> {
  const pad = "x".repeat(bytes);
  const server = createServer((req, res) => {
    fetch(`${upstream}${req.url ?? "/"}`)
      .then(async (answer) => {
        const body = (await answer.json()) as { result?: unknown[] };
        const padded = { ...body, result: [...(body.result ?? []), pad] };
        res.writeHead(answer.status, { "content-type": "application/json" });
        res.end(JSON.stringify(padded));
      })
      .catch((error: unknown) => {
        res.writeHead(502, { "content-type": "text/plain" });
        res.end(String(error));
      });
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
