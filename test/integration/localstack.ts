import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { SFNClient } from "@aws-sdk/client-sfn";
import { runWithEnv } from "@sfn-rollouts/test-support/cli";
import { listExecutions } from "@sfn-rollouts/test-support/executions";
import { DEAD_PORT } from "@sfn-rollouts/test-support/http-server";
import { DynamoRolloutStore } from "../../functions/store/dynamodb.ts";
import { type DemoApp, startDemoApp } from "../../local/demo/app.ts";
import { startLoad } from "../../local/demo/load.ts";
import { writeDemoSpec } from "../../local/demo/spec.ts";
import { type RunningProxy, startProxy } from "../../local/proxy/server.ts";
import { DIGESTS, ERROR_RATES, type Scenario, type ScenarioOptions, type Tag } from "./scenario.ts";

/**
 * The LocalStack backend of the integration scenarios: the same stack deployed with cdklocal to
 * the LocalStack at `LOCALSTACK_ENDPOINT`, driven in real time through the real SDK clients. The
 * demo services and the proxies run on this host and listen on every interface;
 * `LOCALSTACK_TEST_HOST` is how LocalStack's Lambda containers reach it (default
 * `host.docker.internal`).
 */
export interface LocalStackDeployment {
  scenario(index: number): Scenario;
  close(): Promise<void>;
}

const endpoint = () => process.env.LOCALSTACK_ENDPOINT ?? "http://localhost:4566";
const region = "us-east-1";
const credentials = { accessKeyId: "test", secretAccessKey: "test" };

export async function deployToLocalStack(cases: ScenarioOptions[]): Promise<LocalStackDeployment> {
  const host = process.env.LOCALSTACK_TEST_HOST ?? "host.docker.internal";
  const listen = { host: "0.0.0.0", advertise: host };
  const apps = {} as Record<Tag, DemoApp>;
  for (const [version, errorRate] of Object.entries(ERROR_RATES) as Array<[Tag, number]>) {
    apps[version] = await startDemoApp({ version, errorRate, ...listen });
  }
  const proxies: RunningProxy[] = [];
  const rollouts = [];
  for (const [i, options] of cases.entries()) {
    // The Lambdas run in LocalStack's containers: the admin API must be reachable from there.
    const proxy = await startProxy({ host: "0.0.0.0", adminHost: "0.0.0.0", adminReachableAs: [host] });
    proxies.push(proxy);
    const reachable = `http://${host}:${proxy.adminPort}`;
    const dead = `http://${host}:${DEAD_PORT}`;
    const stats = options.providerDown ? dead : reachable;
    rollouts.push({
      id: `Demo${i + 1}`,
      specFiles: writeDemoSpec(
        { kind: "proxy", url: stats },
        {
          name: `demo-${i + 1}`,
          ...(options.pause ? { pause: options.pause } : {}),
          ...(options.count ? { count: options.count } : {}),
          ...(options.background ? { background: options.background } : {}),
          ...(options.background ? { background: options.background } : {}),
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
      adminUrl: reachable,
      upstreams: Object.fromEntries(Object.entries(apps).map(([v, app]) => [v, app.url])),
      repository: `demo-${i + 1}`,
    });
  }
  const dir = mkdtempSync(join(tmpdir(), "sfn-rollouts-localstack-"));
  const configFile = join(dir, "config.json");
  const outputsFile = join(dir, "outputs.json");
  writeFileSync(configFile, JSON.stringify({ rollouts }));
  const env = {
    ...process.env,
    AWS_ENDPOINT_URL: endpoint(),
    AWS_ENDPOINT_URL_S3: endpoint().replace("://", "://s3."),
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    AWS_ENVAR_ALLOWLIST: "AWS_REGION,AWS_DEFAULT_REGION",
    SFN_ROLLOUTS_LOCALSTACK_CONFIG: configFile,
  };
  const cdk = (...args: string[]) =>
    execFileSync("npx", ["cdklocal", ...args, "--app", "npx tsx test/integration/localstack-app.ts"], {
      env,
      stdio: "inherit",
    });
  cdk("bootstrap");
  cdk("deploy", "--require-approval", "never", "--outputs-file", outputsFile);
  const outputs =
    Object.values(
      JSON.parse(readFileSync(outputsFile, "utf8")) as Record<string, Record<string, string>>,
    )[0] ?? {};
  const tableName = outputs.TableName ?? "";
  const aws = { endpoint: endpoint(), region, credentials };
  const sfn = new SFNClient(aws);
  const events = new EventBridgeClient(aws);
  const dynamo = new DynamoDBClient(aws);
  const store = new DynamoRolloutStore({ client: dynamo, tableName });

  const scenario = (index: number): Scenario => {
    const name = `demo-${index + 1}`;
    const proxy = proxies[index] as RunningProxy;
    const stateMachineArn = outputs[`Demo${index + 1}StateMachineArn`] ?? "";
    return {
      proxy,
      apps,
      sfn,
      stateMachineArn,
      name,
      push: async (tag, at) => {
        await events.send(
          new PutEventsCommand({
            Entries: [
              {
                Source: "aws.ecr",
                DetailType: "ECR Image Action",
                Time: at ?? new Date(),
                Detail: JSON.stringify({
                  "action-type": "PUSH",
                  result: "SUCCESS",
                  "repository-name": name,
                  "image-digest": DIGESTS[tag],
                  "image-tag": tag,
                }),
              },
            ],
          }),
        );
      },
      drive: async (done, o = {}) => {
        const load = startLoad({ url: `http://127.0.0.1:${proxy.port}/checkout`, rps: o.rps ?? 20 });
        try {
          const until = Date.now() + (o.maxSeconds ?? 300) * 1000;
          for (;;) {
            const item = await store.get(name);
            if (done(item) || Date.now() > until) return item;
            await new Promise((r) => setTimeout(r, 500));
          }
        } finally {
          await load.stop();
        }
      },
      idle: (ms) => new Promise((r) => setTimeout(r, Math.min(ms, 5_000))),
      item: () => store.get(name),
      cli: (...argv) =>
        runWithEnv(
          {
            ROLLOUTS_TABLE: tableName,
            AWS_ENDPOINT_URL: endpoint(),
            AWS_REGION: region,
            AWS_ACCESS_KEY_ID: credentials.accessKeyId,
            AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
          },
          ...argv,
        ),
      executions: () => listExecutions(sfn, stateMachineArn),
      close: async () => undefined,
    };
  };
  return {
    scenario,
    close: async () => {
      try {
        execFileSync(
          "npx",
          ["cdklocal", "destroy", "--force", "--app", "npx tsx test/integration/localstack-app.ts"],
          {
            env,
            stdio: "inherit",
          },
        );
      } finally {
        sfn.destroy();
        events.destroy();
        dynamo.destroy();
        for (const p of proxies) await p.close();
        for (const a of Object.values(apps)) await a.close();
      }
    },
  };
}
