import { createHash } from "node:crypto";
import { z } from "zod";
import { formatIssues } from "../../statemachine/problems.ts";
import { MODEL_PACKAGE_DETAIL_TYPE, modelPackageRoute } from "../config.ts";
import { MODEL_PACKAGE_ARN } from "../registry/settings.ts";
import { InvalidTriggerEventError, type ParsedPush } from "./event.ts";

/**
 * The event the SageMaker Model Registry emits when a model package version is registered or its
 * approval changes (`source: aws.sagemaker`, `detail-type: SageMaker Model Package State Change`,
 * detail `ModelPackageGroupName`, `ModelPackageVersion`, `ModelPackageArn`,
 * `ModelApprovalStatus`). An `Approved` version starts the rollouts of its group, as a push does:
 * the package ARN is what the target deploys.
 */
export { MODEL_PACKAGE_DETAIL_TYPE, modelPackageRoute };

const ModelPackageEventSchema = z.object({
  id: z.string().min(1),
  "detail-type": z.literal(MODEL_PACKAGE_DETAIL_TYPE),
  source: z.literal("aws.sagemaker"),
  time: z.iso.datetime({ offset: true }),
  detail: z.looseObject({
    ModelPackageGroupName: z.string().min(1),
    ModelPackageVersion: z.number().int().positive(),
    ModelPackageArn: z.string().min(1),
    ModelApprovalStatus: z.string(),
  }),
});

/** Whether `raw` claims to be a Model Registry event (then {@link parseModelPackageEvent} reads it). */
export function isModelPackageEvent(raw: unknown): boolean {
  return typeof raw === "object" && raw !== null && (raw as { source?: unknown }).source === "aws.sagemaker";
}

/**
 * A model package event as a push: repository `sagemaker:<group>`, tag `v<version>`, image the
 * package ARN, digest the SHA-256 of the ARN (what names the execution and makes a redelivered
 * event a duplicate). A status other than `Approved` is ignored with its reason.
 */
export function parseModelPackageEvent(raw: unknown): ParsedPush {
  const result = ModelPackageEventSchema.safeParse(raw);
  if (!result.success) {
    throw new InvalidTriggerEventError(formatIssues(result.error, "(event)"), { cause: result.error });
  }
  const { detail, id, time } = result.data;
  if (detail.ModelApprovalStatus !== "Approved") {
    return { kind: "ignored", reason: `ModelApprovalStatus ${detail.ModelApprovalStatus}` };
  }
  if (!MODEL_PACKAGE_ARN.test(detail.ModelPackageArn)) {
    return {
      kind: "ignored",
      reason: `ModelPackageArn ${JSON.stringify(detail.ModelPackageArn.slice(0, 120))} is not a model package version ARN`,
    };
  }
  return {
    kind: "push",
    push: {
      repository: modelPackageRoute(detail.ModelPackageGroupName),
      digest: `sha256:${createHash("sha256").update(detail.ModelPackageArn).digest("hex")}`,
      tag: `v${detail.ModelPackageVersion}`,
      image: detail.ModelPackageArn,
      eventId: id,
      eventTime: Date.parse(time),
    },
  };
}
