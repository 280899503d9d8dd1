import type { Clock } from "../../functions/clock.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import type { LocalDynamo } from "../dynamo.ts";
import { type RunningProxy, startProxy } from "../proxy/server.ts";
import { localProxyTarget } from "../proxy/target.ts";
import { type EmbeddedStack, startEmbeddedStack } from "../stack.ts";
import { type ModelServer, startModel } from "./model.ts";
import { MODEL_VERSIONS, ModelUsers, writeModelSpec } from "./model-rollout.ts";

/** The model rollout's pieces on this machine: three models, the proxy as model router, the stack. */
export interface ModelStack {
  stack: EmbeddedStack;
  proxy: RunningProxy;
  models: Record<string, ModelServer>;
  users: ModelUsers;
  close(): Promise<void>;
}

/**
 * Starts the three demo models, the local proxy routing as a model router (`router: {type: model}`
 * in the local proxy plugin's config, so cohorts are sticky by `x-user-id`) and the synthesized stack with
 * the model rollout (shadow, then a sticky canary, each judged through `/compare`).
 */
export async function startModelStack(options: {
  clock?: Clock;
  dynamo?: LocalDynamo;
  tableName?: string;
  spec?: { initialDelay?: string; interval?: string; count?: number; samples?: number; window?: string };
  /** An MLflow tracking server that records the promoted version (the target's `mlflow`). */
  mlflow?: { trackingUri: string; model: string; alias?: string };
}): Promise<ModelStack> {
  const models: Record<string, ModelServer> = {};
  const closers: Array<() => Promise<void>> = [];
  try {
    for (const m of MODEL_VERSIONS) {
      models[m.version] = await startModel({ version: m.version, weights: m.weights });
      closers.push(models[m.version]?.close as () => Promise<void>);
    }
    const clock = options.clock;
    const proxy = await startProxy(clock ? { now: () => clock.now() } : {});
    closers.push(proxy.close);
    const stack = await startEmbeddedStack({
      specFiles: writeModelSpec({ router: proxy.adminUrl, ...(options.spec ?? {}) }),
      target: localProxyTarget(
        {
          adminUrl: proxy.adminUrl,
          readinessPath: "/healthz",
          upstreams: Object.fromEntries(Object.entries(models).map(([v, m]) => [v, m.url])),
          router: { type: "model" },
        },
        options.mlflow ? { mlflow: options.mlflow } : {},
      ),
      ...(clock ? { clock } : {}),
      ...(options.dynamo ? { dynamo: options.dynamo } : {}),
      ...(options.tableName ? { tableName: options.tableName } : {}),
    });
    closers.push(stack.close);
    return {
      stack,
      proxy,
      models,
      users: new ModelUsers(proxy.url),
      close: async () => {
        for (const close of closers.reverse()) await close().catch(() => undefined);
      },
    };
  } catch (error) {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    throw error;
  }
}

/** True once the rollout of `tag` has ended, Healthy or Degraded. */
export const finished =
  (tag: string) =>
  (item: RolloutItem | undefined): boolean =>
    item?.currentRevision?.tag === tag && (item.phase === "Healthy" || item.phase === "Degraded");
