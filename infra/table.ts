import type { RemovalPolicy } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type { Construct } from "constructs";
import { TABLE } from "../functions/store/keys.ts";
import type { RolloutControllerProps } from "./props.ts";

/**
 * The rollouts' table (docs/state.md, "The table"): one partition per rollout, on demand, point in
 * time recovery, TTL on measurements, the sparse `byKind` index that lists rollout items.
 */
export function rolloutTable(
  scope: Construct,
  props: Pick<RolloutControllerProps, "tableName" | "encryptionKey">,
  removalPolicy: RemovalPolicy,
): dynamodb.Table {
  const table = new dynamodb.Table(scope, "Table", {
    tableName: props.tableName,
    partitionKey: { name: TABLE.partitionKey, type: dynamodb.AttributeType.STRING },
    sortKey: { name: TABLE.sortKey, type: dynamodb.AttributeType.STRING },
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    timeToLiveAttribute: TABLE.ttlAttribute,
    encryption: props.encryptionKey
      ? dynamodb.TableEncryption.CUSTOMER_MANAGED
      : dynamodb.TableEncryption.AWS_MANAGED,
    encryptionKey: props.encryptionKey,
    removalPolicy,
  });
  table.addGlobalSecondaryIndex({
    indexName: TABLE.listIndex.name,
    partitionKey: { name: TABLE.listIndex.partitionKey, type: dynamodb.AttributeType.STRING },
    sortKey: { name: TABLE.listIndex.sortKey, type: dynamodb.AttributeType.STRING },
    projectionType: dynamodb.ProjectionType.ALL,
  });
  return table;
}
