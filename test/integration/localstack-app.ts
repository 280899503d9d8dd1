import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { App, CfnOutput, Duration, RemovalPolicy, Stack } from "aws-cdk-lib";
import * as ecr from "aws-cdk-lib/aws-ecr";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as nodejs from "aws-cdk-lib/aws-lambda-nodejs";
import { BUNDLING, PROJECT_ROOT } from "../../infra/functions.ts";
import { EMBEDDED_CONTEXT, RolloutController } from "../../infra/index.ts";
import { LOCAL_PROXY_PLUGIN } from "../../local/proxy/target.ts";

/**
 * The app `npm run test:localstack` deploys with cdklocal: one controller and one rollout per
 * scenario (rollout `demo-N` on repository `demo-N`), each on the local proxy the test started on
 * this host, through the local proxy's target plugin deployed as a function of the app (as a
 * user deploys a plugin beside the controller). The test writes the configuration and names it
 * in SFN_ROLLOUTS_LOCALSTACK_CONFIG.
 */
interface Config {
  rollouts: Array<{
    id: string;
    specFiles: string[];
    adminUrl: string;
    upstreams: Record<string, string>;
    repository: string;
  }>;
}

const path = process.env.SFN_ROLLOUTS_LOCALSTACK_CONFIG;
if (!path) throw new Error("SFN_ROLLOUTS_LOCALSTACK_CONFIG names the scenarios' configuration file");
const config = JSON.parse(readFileSync(path, "utf8")) as Config;

// The local proxy runs on the test host, which LocalStack's Lambdas reach over the network.
const app = new App({ context: { [EMBEDDED_CONTEXT]: true } });
const stack = new Stack(app, "SfnRolloutsLocalStack");
const controller = new RolloutController(stack, "Controller", { removalPolicy: RemovalPolicy.DESTROY });
const plugin = new nodejs.NodejsFunction(stack, "LocalProxyPlugin", {
  entry: fileURLToPath(new URL("./localstack-plugin.ts", import.meta.url)),
  handler: "handler",
  runtime: lambda.Runtime.NODEJS_22_X,
  timeout: Duration.seconds(30),
  projectRoot: PROJECT_ROOT,
  depsLockFilePath: `${PROJECT_ROOT.replace(/\/$/, "")}/package-lock.json`,
  bundling: BUNDLING,
});
for (const r of config.rollouts) {
  const added = controller.addRollout(r.id, {
    spec: { files: r.specFiles },
    target: {
      type: "plugin",
      name: LOCAL_PROXY_PLUGIN,
      functionArn: plugin.functionArn,
      config: { adminUrl: r.adminUrl, readinessPath: "/healthz", upstreams: r.upstreams },
    },
    trigger: { repository: ecr.Repository.fromRepositoryName(stack, `${r.id}Repository`, r.repository) },
  });
  new CfnOutput(stack, `${r.id}StateMachineArn`, { value: added.stateMachine.stateMachineArn });
}
new CfnOutput(stack, "TableName", { value: controller.table.tableName });
app.synth();
