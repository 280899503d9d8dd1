import type { SageMakerClient } from "@aws-sdk/client-sagemaker";
import { MlflowRegistry } from "./mlflow.ts";
import type { ModelRegistry } from "./port.ts";
import { SageMakerModelRegistry } from "./sagemaker.ts";
import type { RegistrySettings } from "./settings.ts";

/** The registry adapter for `settings`; the SageMaker client only when the registry is SageMaker's. */
export function createRegistry(
  settings: RegistrySettings,
  clients: { readonly sagemaker?: SageMakerClient; readonly fetch?: typeof fetch },
): ModelRegistry {
  if (settings.type === "mlflow")
    return new MlflowRegistry(settings, clients.fetch ? { fetch: clients.fetch } : {});
  if (!clients.sagemaker) throw new Error("the SageMaker Model Registry needs the sagemaker client");
  return new SageMakerModelRegistry(clients.sagemaker);
}

export * from "./port.ts";
export * from "./settings.ts";
