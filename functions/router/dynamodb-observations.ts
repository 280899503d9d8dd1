import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { isAwsError } from "../aws-errors.ts";
import { storableNumber, TABLE } from "../store/keys.ts";
import { ANSWER_SK_PREFIX, answerSk, modelPk, padTime, requestSk } from "./keys.ts";
import type { FeedbackOutcome, Observations, ObservedWindow, Sample } from "./recorder.ts";

export interface DynamoObservationsOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** The router's name (a SageMaker target's endpoint): its items are `MODEL#<router>`. */
  readonly router: string;
  /** Seconds an answer (and so its feedback) is kept; default one day (the TTL). */
  readonly retentionSeconds?: number;
  /** Most answer items one `/compare` window reads, newest first; default 20,000. */
  readonly maxItems?: number;
  readonly now?: () => number;
}

export const DEFAULT_RETENTION_SECONDS = 86_400;
export const DEFAULT_MAX_ITEMS = 20_000;

/**
 * The router's observations in the controller's DynamoDB table, shared by every execution
 * environment of the router function: one item per answer (served or shadow) in the router's
 * `MODEL#` partition, sorted by completion time; feedback is a conditional update of the served
 * answer's item (404 when it is not kept, 409 when it already has feedback); a `/compare` window is
 * one Query, newest first, bounded by `maxItems` (the answer says when the bound cut it), and is
 * summarized by the same code as the in-memory recorder.
 */
export class DynamoObservations implements Observations {
  readonly now: () => number;
  readonly retentionSeconds: number;
  readonly maxItems: number;
  readonly #doc: DynamoDBDocumentClient;
  readonly #table: string;
  readonly #pk: string;

  constructor(options: DynamoObservationsOptions) {
    this.#doc = DynamoDBDocumentClient.from(options.client, {
      marshallOptions: { removeUndefinedValues: true },
      unmarshallOptions: { wrapNumbers: (value: string) => Number(value) },
    });
    this.#table = options.tableName;
    this.#pk = modelPk(options.router);
    this.now = options.now ?? Date.now;
    this.retentionSeconds = options.retentionSeconds ?? DEFAULT_RETENTION_SECONDS;
    this.maxItems = options.maxItems ?? DEFAULT_MAX_ITEMS;
  }

  /**
   * {@link Observations.add}. A served answer first claims its request id: a conditional put of
   * `R#<id>` that fails while another answer's is kept (not past its TTL), so two environments
   * cannot bind one id twice; only then is the answer written.
   */
  async add(sample: Sample): Promise<boolean> {
    const sk = answerSk(sample.at, sample.role, sample.requestId);
    const expiresAt = Math.ceil(sample.at / 1000) + this.retentionSeconds;
    const prediction = sample.prediction === undefined ? undefined : JSON.stringify(sample.prediction);
    if (sample.role === "served" && !(await this.#claim(sample, sk, prediction, expiresAt))) return false;
    await this.#doc.send(
      new PutCommand({
        TableName: this.#table,
        Item: {
          [TABLE.partitionKey]: this.#pk,
          [TABLE.sortKey]: sk,
          at: sample.at,
          version: sample.version,
          role: sample.role,
          latencyMs: storableNumber(sample.latencyMs) ?? 0,
          ok: sample.ok,
          requestId: sample.requestId,
          user: sample.user,
          prediction,
          agree: sample.agree,
          absDiff: sample.absDiff === undefined ? undefined : storableNumber(sample.absDiff),
          relDiff: sample.relDiff === undefined ? undefined : storableNumber(sample.relDiff),
          feedback: sample.feedback,
          [TABLE.ttlAttribute]: expiresAt,
        },
      }),
    );
    return true;
  }

  /** Writes `R#<id>` unless a kept answer has it: false when the id is taken. */
  async #claim(
    sample: Sample,
    sk: string,
    prediction: string | undefined,
    expiresAt: number,
  ): Promise<boolean> {
    try {
      await this.#doc.send(
        new PutCommand({
          TableName: this.#table,
          Item: {
            [TABLE.partitionKey]: this.#pk,
            [TABLE.sortKey]: requestSk(sample.requestId),
            answerSk: sk,
            version: sample.version,
            prediction,
            [TABLE.ttlAttribute]: expiresAt,
          },
          // An item past its TTL is gone for the router (DynamoDB deletes it within days, not at once).
          ConditionExpression: "attribute_not_exists(#pk) OR #ttl <= :now",
          ExpressionAttributeNames: { "#pk": TABLE.partitionKey, "#ttl": TABLE.ttlAttribute },
          ExpressionAttributeValues: { ":now": Math.floor(this.now() / 1000) },
        }),
      );
      return true;
    } catch (err) {
      if (isAwsError(err, "ConditionalCheckFailedException")) return false;
      throw err;
    }
  }

  async has(requestId: string): Promise<boolean> {
    return (await this.#index(requestId)) !== undefined;
  }

  async served(requestId: string): Promise<Sample | undefined> {
    const index = await this.#index(requestId);
    if (index === undefined) return undefined;
    const item = await this.#get(index.answerSk);
    return item === undefined ? undefined : toSample(item);
  }

  async feedback(requestId: string, good: boolean): Promise<FeedbackOutcome> {
    const index = await this.#index(requestId);
    const missing: FeedbackOutcome = {
      ok: false,
      status: 404,
      message: `no answer with request id ${JSON.stringify(requestId)} is kept (the router keeps answers for ${this.retentionSeconds} s)`,
    };
    if (index === undefined) return missing;
    try {
      await this.#doc.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: { [TABLE.partitionKey]: this.#pk, [TABLE.sortKey]: index.answerSk },
          UpdateExpression: "SET #feedback = :good",
          ConditionExpression: "attribute_exists(#pk) AND attribute_not_exists(#feedback)",
          ExpressionAttributeNames: { "#feedback": "feedback", "#pk": TABLE.partitionKey },
          ExpressionAttributeValues: { ":good": good },
        }),
      );
    } catch (err) {
      if (!isAwsError(err, "ConditionalCheckFailedException")) throw err;
      const item = await this.#get(index.answerSk);
      if (item === undefined) return missing;
      return {
        ok: false,
        status: 409,
        message: `request id ${JSON.stringify(requestId)} already has feedback`,
      };
    }
    return { ok: true, version: index.version, good };
  }

  async window(windowSeconds: number): Promise<ObservedWindow> {
    const since = this.now() - windowSeconds * 1000;
    const samples: Sample[] = [];
    let startKey: Record<string, unknown> | undefined;
    let truncated = false;
    do {
      const page = await this.#doc.send(
        this.#windowQuery(since, Math.min(1000, this.maxItems - samples.length), startKey),
      );
      for (const item of page.Items ?? []) {
        const sample = toSample(item);
        // The sort key has whole milliseconds; `at` may not.
        if (sample.at > since) samples.push(sample);
      }
      startKey = page.LastEvaluatedKey;
      if (startKey !== undefined && samples.length >= this.maxItems) {
        truncated = await this.#more(startKey, since);
        break;
      }
    } while (startKey !== undefined);
    samples.reverse();
    return { samples, read: samples.length, limit: this.maxItems, truncated };
  }

  /** The answers after `since` (epoch ms), newest first, `limit` at most, from `startKey` on. */
  #windowQuery(since: number, limit: number, startKey: Record<string, unknown> | undefined): QueryCommand {
    return new QueryCommand({
      TableName: this.#table,
      KeyConditionExpression: "#pk = :pk AND #sk BETWEEN :from AND :to",
      ExpressionAttributeNames: { "#pk": TABLE.partitionKey, "#sk": TABLE.sortKey },
      ExpressionAttributeValues: {
        ":pk": this.#pk,
        // `at > since`, as the in-memory recorder: from the next millisecond on.
        ":from": `${ANSWER_SK_PREFIX}${padTime(since + 1)}`,
        ":to": `${ANSWER_SK_PREFIX}~`,
      },
      ScanIndexForward: false,
      Limit: limit,
      ExclusiveStartKey: startKey,
    });
  }

  /** Whether the window holds an item past the last one read: the bound cut it. */
  async #more(startKey: Record<string, unknown>, since: number): Promise<boolean> {
    const page = await this.#doc.send(this.#windowQuery(since, 1, startKey));
    return (page.Items ?? []).length > 0;
  }

  async #index(requestId: string): Promise<{ answerSk: string; version: string } | undefined> {
    const item = await this.#get(requestSk(requestId));
    if (item === undefined || typeof item.answerSk !== "string") return undefined;
    const expiresAt = item[TABLE.ttlAttribute];
    if (typeof expiresAt === "number" && expiresAt * 1000 <= this.now()) {
      return undefined; // past its TTL: DynamoDB deletes it within days, not at once
    }
    return { answerSk: item.answerSk, version: String(item.version) };
  }

  async #get(sk: string): Promise<Record<string, unknown> | undefined> {
    const out = await this.#doc.send(
      new GetCommand({
        TableName: this.#table,
        Key: { [TABLE.partitionKey]: this.#pk, [TABLE.sortKey]: sk },
        ConsistentRead: true,
      }),
    );
    return out.Item;
  }
}

/** A stored answer back as the recorder's sample. */
function toSample(item: Record<string, unknown>): Sample {
  return {
    at: Number(item.at),
    version: String(item.version),
    role: item.role === "shadow" ? "shadow" : "served",
    latencyMs: Number(item.latencyMs),
    ok: item.ok === true,
    requestId: String(item.requestId),
    user: String(item.user),
    ...(typeof item.prediction === "string" ? { prediction: JSON.parse(item.prediction) } : {}),
    ...(typeof item.agree === "boolean" ? { agree: item.agree } : {}),
    ...(typeof item.absDiff === "number" ? { absDiff: item.absDiff } : {}),
    ...(typeof item.relDiff === "number" ? { relDiff: item.relDiff } : {}),
    ...(typeof item.feedback === "boolean" ? { feedback: item.feedback } : {}),
  };
}
