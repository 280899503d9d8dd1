import { SageMakerRuntimeClient } from "@aws-sdk/client-sagemaker-runtime";
import { vi } from "vitest";
import { createHandler } from "../../functions/handlers/router.ts";
import { DynamoRouterConfig } from "../../functions/router/dynamodb-config.ts";
import { backendCaller } from "../../functions/router/sagemaker-backend.ts";
import { SharedModelRouter } from "../../functions/router/shared.ts";
import {
  type LocalFunctionUrl,
  localStreamingRuntime,
  startFunctionUrl,
} from "../../local/aws/function-url.ts";
import { type DynaliteHarness, startDynalite } from "./dynalite.ts";

/** The credentials of this process, as the embedded runtime gives its functions. */
export const credentials = { accessKeyId: "local", secretAccessKey: "local", sessionToken: "local" };

export interface IamRouter {
  db: DynaliteHarness;
  url: LocalFunctionUrl;
  close(): Promise<void>;
}

/**
 * The model router function ("fraud": v1 primary, v2 candidate, SageMaker variants) behind a local
 * Function URL whose auth is AWS_IAM in `region`, over a dynalite table; the process's credentials
 * and region are those the URL checks signatures against (restored by `close`).
 */
export async function startIamRouter(region: string): Promise<IamRouter> {
  vi.stubEnv("AWS_ACCESS_KEY_ID", credentials.accessKeyId);
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", credentials.secretAccessKey);
  vi.stubEnv("AWS_SESSION_TOKEN", credentials.sessionToken);
  vi.stubEnv("AWS_REGION", region);
  const db = await startDynalite();
  const config = new DynamoRouterConfig({ client: db.client(), tableName: db.tableName, router: "fraud" });
  await config.write({
    primary: { name: "v1", sagemaker: { endpoint: "fraud", variant: "v1" } },
    candidate: { name: "v2", sagemaker: { endpoint: "fraud", variant: "v2" } },
  });
  const shared = new SharedModelRouter({
    client: db.client(),
    tableName: db.tableName,
    router: "fraud",
    call: backendCaller(new SageMakerRuntimeClient({ region })),
    configCacheMs: 0,
  });
  const url = await startFunctionUrl(
    createHandler(() => shared, localStreamingRuntime),
    0,
    {
      type: "AWS_IAM",
      credentials,
      region,
    },
  );
  return {
    db,
    url,
    async close() {
      await url.close();
      await db.close();
      vi.unstubAllEnvs();
    },
  };
}
