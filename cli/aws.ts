import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SFNClient } from "@aws-sdk/client-sfn";
import { SfnTaskTokens } from "../functions/abort/task-tokens.ts";
import { type ClientConfig, clientConfig } from "../functions/aws-clients.ts";
import { type Clock, systemClock } from "../functions/clock.ts";
import { ENV } from "../functions/config.ts";
import { DynamoRolloutStore } from "../functions/store/dynamodb.ts";
import { SfnExecutions } from "../functions/trigger/executions.ts";
import type { OperateDeps } from "../functions/workflow/operate.ts";
import { UsageError } from "./io.ts";

/**
 * The composition root of the operating commands: the same real SDK clients the Lambdas use, so
 * the CLI works against an account (default credential chain and region) and against the
 * embedded runtime (`AWS_ENDPOINT_URL_SFN`, `AWS_ENDPOINT_URL_DYNAMODB`, which the SDK reads
 * itself) with no code of its own for either.
 */
export interface AwsOptions {
  /** `--table`; falls back to `ROLLOUTS_TABLE`. */
  table?: string | undefined;
  /** Where `ROLLOUTS_TABLE` is read; default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  clock?: Clock;
}

/** What a command runs with; `close()` releases the SDK clients' sockets so the process can exit. */
export interface OperateContext {
  deps: OperateDeps;
  tableName: string;
  close(): void;
}

/** The table name from `--table` or `ROLLOUTS_TABLE`; a {@link UsageError} (exit 2) when neither is set. */
export function tableNameFrom(options: Pick<AwsOptions, "table" | "env">): string {
  const env = options.env ?? process.env;
  const name = options.table?.trim() || env[ENV.tableName]?.trim();
  if (!name) {
    throw new UsageError(
      `no rollouts table: pass --table NAME or set ${ENV.tableName} (the construct's TableName output)`,
    );
  }
  return name;
}

/** Builds the store and the Step Functions ports once per command run. */
export function operateContext(options: AwsOptions = {}): OperateContext {
  const tableName = tableNameFrom(options);
  const clock = options.clock ?? systemClock;
  const config = sdkConfig(options.env ?? process.env);
  const dynamo = new DynamoDBClient(config);
  const sfn = new SFNClient(config);
  return {
    tableName,
    deps: {
      store: new DynamoRolloutStore({ client: dynamo, tableName, clock }),
      tokens: new SfnTaskTokens(sfn),
      executions: new SfnExecutions(sfn),
      clock,
    },
    close() {
      dynamo.destroy();
      sfn.destroy();
    },
  };
}

/**
 * The SDK settings shared with the Lambdas (`functions/aws-clients.ts`): connection and request
 * timeouts and bounded retries, so an endpoint that never answers ends the command with an error
 * instead of a hang. A bad override in the environment is a {@link UsageError} (exit 2).
 */
function sdkConfig(env: Readonly<Record<string, string | undefined>>): ClientConfig {
  try {
    return clientConfig(env);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}
