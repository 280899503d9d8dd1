import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  DescribeExecutionCommand,
  DescribeStateMachineCommand,
  ListExecutionsCommand,
  ListStateMachinesCommand,
  ListTagsForResourceCommand,
  SFNClient,
} from "@aws-sdk/client-sfn";
import { clientConfig } from "../../functions/aws-clients.ts";
import { COORDINATOR_TAG, TABLE_TAG } from "../../functions/config.ts";
import { DynamoRolloutStore } from "../../functions/store/dynamodb.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import { START_EXECUTION_SYNC } from "../../statemachine/waves-compile.ts";
import type { AwsOptions } from "../aws.ts";
import { UsageError } from "../io.ts";

/**
 * Finds every pass of a release in waves from its coordinator, and reads each pass's rollout in
 * its own region: the coordinator's definition names each pass's state machine (and the role of
 * another account), each state machine's `sfn-rollouts:table` tag names its controller's table.
 * A pass that cannot be read (another account without credentials, a table gone) is a row that
 * says why, never the end of the command.
 */

/** A pass as the coordinator's definition starts it. */
export interface CoordinatedPassRef {
  /** `eu`, `rest-us-east-1`: from the Task's name `Pass01-eu`. */
  pass: string;
  stateMachineArn: string;
  region: string;
  account: string;
  /** The role the coordinator assumes in another account (`Credentials.RoleArn`). */
  roleArn?: string;
}

/** One row of `rollouts waves`: the pass's rollout item, or why it could not be read. */
export interface WaveRow {
  location: { region: string; table: string };
  pass?: string;
  account?: string;
  item?: RolloutItem;
  problem?: string;
}

/** The coordinator of a release and what `rollouts waves` says about it. */
export interface FoundRelease {
  coordinatorArn: string;
  /** The coordinator's newest execution (`shop-…-g2 RUNNING`), if it ran. */
  latest?: { name: string; status: string };
  rows: WaveRow[];
}

const ARN = /^arn:([^:]+):states:([^:]+):(\d{12}):(stateMachine|execution):([^:]+)(?::(.+))?$/;

/** `{region, account, name}` of a state machine or execution ARN; undefined for anything else. */
export function parseStatesArn(
  arn: string,
): { partition: string; region: string; account: string; kind: string; name: string } | undefined {
  const match = ARN.exec(arn);
  if (!match) return undefined;
  const [, partition, region, account, kind, name] = match as unknown as string[];
  return {
    partition: partition as string,
    region: region as string,
    account: account as string,
    kind: kind as string,
    name: name as string,
  };
}

/**
 * The passes a coordinator's definition starts, in pass order: its `PassNN-<pass>` Tasks on
 * `startExecution.sync:2` (the `Undo-…` Tasks of `rollback-all` start the same state machines
 * again and are not passes). A definition that is not a coordinator's is an error naming why.
 */
export function passesOfCoordinator(definition: unknown, where: string): CoordinatedPassRef[] {
  const states = (definition as { States?: unknown } | null)?.States;
  if (typeof states !== "object" || states === null) {
    throw new Error(`${where}: the definition has no States: not a release's coordinator`);
  }
  const passes: { n: number; ref: CoordinatedPassRef }[] = [];
  for (const [name, state] of Object.entries(states as Record<string, Record<string, unknown>>)) {
    const match = /^Pass(\d+)-(.+)$/.exec(name);
    if (!match || state.Type !== "Task" || state.Resource !== START_EXECUTION_SYNC) continue;
    const parameters = (state.Parameters ?? {}) as { StateMachineArn?: unknown };
    const arn = typeof parameters.StateMachineArn === "string" ? parameters.StateMachineArn : "";
    const parsed = parseStatesArn(arn);
    if (parsed?.kind !== "stateMachine") {
      throw new Error(
        `${where}: state ${name}: Parameters.StateMachineArn "${arn}" is not a state machine ARN`,
      );
    }
    const role = (state.Credentials as { RoleArn?: unknown } | undefined)?.RoleArn;
    passes.push({
      n: Number(match[1]),
      ref: {
        pass: match[2] as string,
        stateMachineArn: arn,
        region: parsed.region,
        account: parsed.account,
        ...(typeof role === "string" ? { roleArn: role } : {}),
      },
    });
  }
  if (passes.length === 0)
    throw new Error(`${where}: the definition starts no pass: not a release's coordinator`);
  return passes.sort((a, b) => a.n - b.n).map((p) => p.ref);
}

/** The SDK clients of one region, built once per region and released together. */
class RegionalClients {
  readonly #env: Readonly<Record<string, string | undefined>>;
  readonly #sfn = new Map<string, SFNClient>();
  readonly #dynamo = new Map<string, DynamoDBClient>();

  constructor(env: Readonly<Record<string, string | undefined>>) {
    this.#env = env;
  }

  #config(region: string | undefined) {
    let config: ReturnType<typeof clientConfig>;
    try {
      config = clientConfig(this.#env);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    return region === undefined ? config : { ...config, region };
  }

  sfn(region?: string): SFNClient {
    const key = region ?? "";
    let client = this.#sfn.get(key);
    if (!client) {
      client = new SFNClient(this.#config(region));
      this.#sfn.set(key, client);
    }
    return client;
  }

  dynamo(region: string): DynamoDBClient {
    let client = this.#dynamo.get(region);
    if (!client) {
      client = new DynamoDBClient(this.#config(region));
      this.#dynamo.set(region, client);
    }
    return client;
  }

  close(): void {
    for (const c of this.#sfn.values()) c.destroy();
    for (const c of this.#dynamo.values()) c.destroy();
  }
}

/** The coordinator that started `executionArn` (the input's `AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID`). */
async function coordinatorOfExecution(sfn: SFNClient, executionArn: string): Promise<string | undefined> {
  const described = await sfn.send(new DescribeExecutionCommand({ executionArn }));
  let input: unknown;
  try {
    input = JSON.parse(described.input ?? "null");
  } catch {
    return undefined;
  }
  const parent = (input as { AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID?: unknown } | null)
    ?.AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID;
  const parsed = typeof parent === "string" ? parseStatesArn(parent) : undefined;
  if (parsed?.kind !== "execution") return undefined;
  return `arn:${parsed.partition}:states:${parsed.region}:${parsed.account}:stateMachine:${parsed.name}`;
}

/** The state machines of the client's region whose name `keep` accepts, in listing order. */
async function stateMachinesNamed(sfn: SFNClient, keep: (name: string) => boolean): Promise<string[]> {
  const found: string[] = [];
  let nextToken: string | undefined;
  do {
    const page = await sfn.send(new ListStateMachinesCommand({ ...(nextToken ? { nextToken } : {}) }));
    for (const m of page.stateMachines ?? []) {
      if (m.name !== undefined && m.stateMachineArn && keep(m.name)) found.push(m.stateMachineArn);
    }
    nextToken = page.nextToken;
  } while (nextToken);
  return found;
}

/** The state machine named `<rollout>-waves` in the client's region, if there is one. */
async function coordinatorByName(sfn: SFNClient, rollout: string): Promise<string | undefined> {
  const name = `${rollout}-waves`;
  return (await stateMachinesNamed(sfn, (n) => n === name))[0];
}

/**
 * The coordinator a pass's state machine names in its `sfn-rollouts:coordinator` tag, when that
 * ARN is a state machine's named `<rollout>-waves`; undefined without the tag.
 */
async function coordinatorOfTag(
  sfn: SFNClient,
  stateMachineArn: string,
  rollout: string,
): Promise<string | undefined> {
  const tags = await sfn.send(new ListTagsForResourceCommand({ resourceArn: stateMachineArn }));
  const value = tags.tags?.find((t) => t.key === COORDINATOR_TAG)?.value;
  const parsed = value === undefined ? undefined : parseStatesArn(value);
  return parsed?.kind === "stateMachine" && parsed.name === `${rollout}-waves` ? value : undefined;
}

/**
 * From a pass's region: the state machines `<rollout>-<pass>` of this region, the first whose
 * `sfn-rollouts:coordinator` tag names `<rollout>-waves` (in any region) gives the coordinator.
 */
async function coordinatorOfPassHere(sfn: SFNClient, rollout: string): Promise<string | undefined> {
  const candidates = await stateMachinesNamed(
    sfn,
    (n) => n.startsWith(`${rollout}-`) && n !== `${rollout}-waves`,
  );
  for (const arn of candidates) {
    const found = await coordinatorOfTag(sfn, arn, rollout);
    if (found) return found;
  }
  return undefined;
}

/** The state machine of an execution ARN (`…:execution:<machine>:<name>`). */
function stateMachineOfExecution(executionArn: string): string | undefined {
  const parsed = parseStatesArn(executionArn);
  if (parsed?.kind !== "execution") return undefined;
  return `arn:${parsed.partition}:states:${parsed.region}:${parsed.account}:stateMachine:${parsed.name}`;
}

const describeError = (error: unknown): string => {
  const e = error as { name?: string; message?: string };
  return e.name && e.name !== "Error" ? `${e.name}: ${e.message}` : String(e.message ?? error);
};

/** Reads one pass's rollout item in its region; a failure is the row's `problem`. */
async function readPass(
  clients: RegionalClients,
  rollout: string,
  ref: CoordinatedPassRef,
  home: string,
): Promise<WaveRow> {
  const row: WaveRow = { location: { region: ref.region, table: "" }, pass: ref.pass, account: ref.account };
  const foreign = ref.account !== home;
  try {
    const tags = await clients
      .sfn(ref.region)
      .send(new ListTagsForResourceCommand({ resourceArn: ref.stateMachineArn }));
    const table = tags.tags?.find((t) => t.key === TABLE_TAG)?.value;
    if (!table) {
      return {
        ...row,
        problem: `its state machine ${ref.stateMachineArn} has no ${TABLE_TAG} tag naming its table`,
      };
    }
    row.location.table = table;
    const store = new DynamoRolloutStore({ client: clients.dynamo(ref.region), tableName: table });
    const item = await store.get(rollout);
    if (!item) return { ...row, problem: `no rollout "${rollout}" in table ${table}` };
    return { ...row, item };
  } catch (error) {
    return { ...row, problem: whyUnreadable(error, foreign ? ref.account : undefined) };
  }
}

const DENIED =
  /AccessDenied|UnrecognizedClient|InvalidClientTokenId|ExpiredToken|NotAuthorized|CredentialsProvider/;

/**
 * Why a pass could not be read: the SDK's error (the store's cause when it wraps one); for a pass
 * in another `account` refused by IAM or STS, that these credentials are not that account's.
 */
export function whyUnreadable(error: unknown, account: string | undefined): string {
  const cause = (error as { cause?: unknown }).cause;
  const failure = cause instanceof Error ? cause : error;
  const why = describeError(failure);
  const denied = DENIED.test((failure as { name?: string }).name ?? "");
  return account !== undefined && denied
    ? `cannot read account ${account} with these credentials (run with that account's): ${why}`
    : why;
}

/** Where to look for a release's coordinator. */
export interface FindOptions {
  /** The rollout's item in the CLI's region (a pass's `rollouts get`), if it has one. */
  item?: RolloutItem | undefined;
  /** The release's home region (`--home-region`): `<rollout>-waves` is looked for there only. */
  homeRegion?: string | undefined;
  env?: AwsOptions["env"];
}

/**
 * Finds the release `rollout` belongs to and reads every pass. The coordinator is, in this order:
 * the one that started `item`'s execution, or that its state machine's `sfn-rollouts:coordinator`
 * tag names (a pass's `rollouts get`); with `homeRegion`, the state machine `<rollout>-waves`
 * there; else `<rollout>-waves` in the CLI's region (the home region), or the one a pass's state
 * machine of the CLI's region names in its tag (any pass's region). Undefined when none is.
 */
export async function findRelease(rollout: string, options: FindOptions): Promise<FoundRelease | undefined> {
  const clients = new RegionalClients(options.env ?? process.env);
  try {
    const here = clients.sfn();
    let coordinatorArn: string | undefined;
    const execution = options.item?.executionArn ?? undefined;
    if (execution) {
      coordinatorArn = await coordinatorOfExecution(here, execution).catch(() => undefined);
      const machine = stateMachineOfExecution(execution);
      if (!coordinatorArn && machine) {
        coordinatorArn = await coordinatorOfTag(here, machine, rollout).catch(() => undefined);
      }
    }
    if (options.homeRegion !== undefined) {
      coordinatorArn ??= await coordinatorByName(clients.sfn(options.homeRegion), rollout);
    } else {
      coordinatorArn ??= await coordinatorByName(here, rollout);
      coordinatorArn ??= await coordinatorOfPassHere(here, rollout);
    }
    if (!coordinatorArn) return undefined;
    const at = parseStatesArn(coordinatorArn);
    if (!at) throw new Error(`the coordinator's ARN "${coordinatorArn}" is not a state machine's`);
    const sfn = clients.sfn(at.region);
    const described = await sfn.send(new DescribeStateMachineCommand({ stateMachineArn: coordinatorArn }));
    let definition: unknown;
    try {
      definition = JSON.parse(described.definition ?? "");
    } catch (error) {
      throw new Error(`${coordinatorArn}: the definition is not JSON: ${(error as Error).message}`);
    }
    const passes = passesOfCoordinator(definition, coordinatorArn);
    const executions = await sfn.send(
      new ListExecutionsCommand({ stateMachineArn: coordinatorArn, maxResults: 1 }),
    );
    const newest = executions.executions?.[0];
    const rows = await Promise.all(passes.map((ref) => readPass(clients, rollout, ref, at.account)));
    return {
      coordinatorArn,
      ...(newest?.name && newest.status ? { latest: { name: newest.name, status: newest.status } } : {}),
      rows,
    };
  } finally {
    clients.close();
  }
}
