import { localProxyPlugin } from "../../local/proxy/target.ts";

/**
 * The local proxy's target plugin as LocalStack runs it: a Lambda function of the deployed app
 * (`localstack-app.ts`), reaching the proxy's admin API on the test host, on the real clock.
 */
export const handler = localProxyPlugin();
