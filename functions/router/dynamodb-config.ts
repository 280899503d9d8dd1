import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { RolloutsError } from "../../statemachine/errors.ts";
import { formatIssues } from "../../statemachine/problems.ts";
import { TABLE } from "../store/keys.ts";
import { type ModelRouterConfig, type ModelRouterConfigInput, ModelRouterConfigSchema } from "./config.ts";
import { MODEL_CONFIG_SK, modelPk } from "./keys.ts";

export interface DynamoRouterConfigOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** The router's name (a SageMaker target's endpoint): its items are `MODEL#<router>`. */
  readonly router: string;
  /** Milliseconds a read configuration is reused by one execution environment; default 1,000. */
  readonly cacheMs?: number;
  readonly now?: () => number;
}

/** The stored configuration item does not hold a valid configuration: names the item and the field. */
export class RouterConfigInvalidError extends RolloutsError {
  override readonly name = "RouterConfigInvalidError";
}

/**
 * The model router's configuration as one item of the controller's table (`MODEL#<router>` /
 * `CONFIG`): the target writes it when a step changes the routing, every execution environment of
 * the router function reads it, each reusing what it read for `cacheMs` (so a step reaches every
 * environment within that time, and a busy router reads it about once a second per environment).
 */
export class DynamoRouterConfig {
  readonly cacheMs: number;
  readonly #doc: DynamoDBDocumentClient;
  readonly #table: string;
  readonly #pk: string;
  readonly #now: () => number;
  #cached: { at: number; config: ModelRouterConfig | null } | undefined;

  constructor(options: DynamoRouterConfigOptions) {
    this.#doc = DynamoDBDocumentClient.from(options.client, {
      marshallOptions: { removeUndefinedValues: true },
    });
    this.#table = options.tableName;
    this.#pk = modelPk(options.router);
    this.cacheMs = options.cacheMs ?? 1000;
    this.#now = options.now ?? Date.now;
  }

  /** Validates and writes the whole configuration (it replaces the previous one atomically). */
  async write(input: ModelRouterConfigInput): Promise<ModelRouterConfig> {
    const config = ModelRouterConfigSchema.parse(input);
    await this.#doc.send(
      new PutCommand({
        TableName: this.#table,
        Item: {
          [TABLE.partitionKey]: this.#pk,
          [TABLE.sortKey]: MODEL_CONFIG_SK,
          config: JSON.stringify(config),
          updatedAt: this.#now(),
        },
      }),
    );
    this.#cached = undefined;
    return config;
  }

  /** The configuration, or null before the target wrote one; from the cache while it is fresh. */
  async read(): Promise<ModelRouterConfig | null> {
    const now = this.#now();
    if (this.#cached && now - this.#cached.at < this.cacheMs) return this.#cached.config;
    const out = await this.#doc.send(
      new GetCommand({
        TableName: this.#table,
        Key: { [TABLE.partitionKey]: this.#pk, [TABLE.sortKey]: MODEL_CONFIG_SK },
      }),
    );
    const config = out.Item === undefined ? null : this.#parse(out.Item.config);
    this.#cached = { at: now, config };
    return config;
  }

  #parse(raw: unknown): ModelRouterConfig {
    const where = `${this.#pk}/${MODEL_CONFIG_SK}`;
    let value: unknown;
    try {
      value = JSON.parse(String(raw));
    } catch (err) {
      throw new RouterConfigInvalidError(`${where}: config is not JSON: ${(err as Error).message}`);
    }
    const parsed = ModelRouterConfigSchema.safeParse(value);
    if (!parsed.success)
      throw new RouterConfigInvalidError(`${where}: ${formatIssues(parsed.error, "config")}`);
    return parsed.data;
  }
}
