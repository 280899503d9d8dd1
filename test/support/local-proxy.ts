import { LambdaClient } from "@aws-sdk/client-lambda";
import { clientConfig } from "../../functions/aws-clients.ts";
import type { Clock } from "../../functions/clock.ts";
import { createTrafficTarget } from "../../functions/traffic/index.ts";
import type { TrafficTarget } from "../../functions/traffic/port.ts";
import {
  LOCAL_PROXY_FUNCTION_ARN,
  type LocalProxyConfig,
  localProxyPlugin,
  localProxyTarget,
} from "../../local/proxy/target.ts";
import { startRuntime } from "../../local/runtime.ts";

/**
 * The local proxy as a rollout drives it: the product's `plugin` target, invoking the local proxy
 * plugin through Lambda `Invoke` on the embedded runtime's façade, where the plugin runs at
 * `LOCAL_PROXY_FUNCTION_ARN` on `clock` (the path every call of the workflow takes).
 */
export async function localProxyThroughPlugin(
  config: LocalProxyConfig,
  clock: Clock,
): Promise<{ router: TrafficTarget; close: () => Promise<void> }> {
  const runtime = await startRuntime({
    clock,
    functions: { [LOCAL_PROXY_FUNCTION_ARN]: { handler: localProxyPlugin({ clock }) } },
  });
  const lambda = new LambdaClient({
    ...clientConfig({}),
    endpoint: runtime.facadeUrl,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  return {
    router: createTrafficTarget(localProxyTarget(config), { lambda }, clock),
    close: async () => {
      lambda.destroy();
      await runtime.close();
    },
  };
}
