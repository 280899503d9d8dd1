import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { ModelRouterConfig } from "./config.ts";
import { DynamoRouterConfig } from "./dynamodb-config.ts";
import { DynamoObservations } from "./dynamodb-observations.ts";
import {
  type CallBackend,
  ModelRouter,
  type ModelRouterOptions,
  type RouterRequest,
  type RouterResponse,
} from "./router.ts";

export interface SharedRouterOptions
  extends Omit<ModelRouterOptions, "config" | "observations" | "maxSamples" | "maxRequestIds"> {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** The router's name (a SageMaker target's endpoint): its items are `MODEL#<router>`. */
  readonly router: string;
  readonly call?: CallBackend;
  /** Milliseconds a configuration read is reused; default 1,000. */
  readonly configCacheMs?: number;
  /** Seconds answers are kept for feedback; default one day. */
  readonly retentionSeconds?: number;
  /** Most answers a `/compare` window reads; default 20,000. */
  readonly maxItems?: number;
}

/**
 * A model router whose configuration and observations live in the controller's table, so any
 * number of them (the execution environments of the router function) route alike and `/compare`
 * summarizes what all of them saw.
 */
export class SharedModelRouter {
  readonly router: ModelRouter;
  readonly config: DynamoRouterConfig;
  readonly observations: DynamoObservations;
  #applied: ModelRouterConfig | null = null;

  constructor(options: SharedRouterOptions) {
    const { client, tableName, router, configCacheMs, retentionSeconds, maxItems, ...rest } = options;
    this.observations = new DynamoObservations({
      client,
      tableName,
      router,
      ...(retentionSeconds !== undefined ? { retentionSeconds } : {}),
      ...(maxItems !== undefined ? { maxItems } : {}),
      ...(rest.now ? { now: rest.now } : {}),
    });
    this.config = new DynamoRouterConfig({
      client,
      tableName,
      router,
      ...(configCacheMs !== undefined ? { cacheMs: configCacheMs } : {}),
      ...(rest.now ? { now: rest.now } : {}),
    });
    this.router = new ModelRouter({ ...rest, observations: this.observations });
  }

  /** Reads the configuration (cached), applies it when it changed, then handles the request. */
  async handle(request: RouterRequest): Promise<RouterResponse> {
    const config = await this.config.read();
    if (config !== null && config !== this.#applied) {
      this.router.configure(config);
      this.#applied = config;
    }
    return this.router.handle(request);
  }
}
