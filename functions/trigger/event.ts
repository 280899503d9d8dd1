import { z } from "zod";
import { RolloutsError } from "../../statemachine/errors.ts";
import { formatIssues } from "../../statemachine/problems.ts";

/**
 * The shapes AWS gives the values a push carries. They reach queries (`{{rollout.latest}}`,
 * `{{rollout.stable}}`, `{{rollout.digest}}`) and execution names, so anything else is refused.
 *
 * - Repository names, ECR's API reference: 2–256 characters,
 *   `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(\/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*`.
 * - Image tags: ECR's API allows 1–300 characters; the characters are the OCI distribution
 *   spec's (`[a-zA-Z0-9_][a-zA-Z0-9._-]*`), the only ones a registry push accepts.
 * - Digests: ECR computes `sha256:` and 64 lower-case hex digits, nothing else.
 */
export const ECR_REPOSITORY_NAME_MAX = 256;
export const ECR_IMAGE_TAG_MAX = 300;
const REPOSITORY_PART = "[a-z0-9]+(?:(?:\\.|_|__|-+)[a-z0-9]+)*";
const REPOSITORY_NAME = new RegExp(`^${REPOSITORY_PART}(?:/${REPOSITORY_PART})*$`);
const IMAGE_TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
const IMAGE_DIGEST = /^sha256:[0-9a-f]{64}$/;

export const isRepositoryName = (s: string): boolean =>
  s.length >= 2 && s.length <= ECR_REPOSITORY_NAME_MAX && REPOSITORY_NAME.test(s);
export const isImageTag = (s: string): boolean => s.length <= ECR_IMAGE_TAG_MAX && IMAGE_TAG.test(s);
export const isImageDigest = (s: string): boolean => IMAGE_DIGEST.test(s);

/** A value from outside, quoted for a message: JSON-escaped and cut. */
const quoted = (s: string) =>
  s.length > 80 ? `${JSON.stringify(s.slice(0, 80)).slice(0, -1)}…"` : JSON.stringify(s);

/**
 * The EventBridge event ECR emits when an image push completes (AWS docs, "Amazon ECR events and
 * EventBridge": `source: aws.ecr`, `detail-type: ECR Image Action`, detail `action-type`,
 * `result`, `repository-name`, `image-digest`, `image-tag`). `image-tag` is absent for a push by
 * digest only; ECR may add fields (`manifest-media-type`, `artifact-media-type`), which are kept.
 * `action-type`/`result` are strings here so that a DELETE or a FAILURE reaching the handler (a
 * too-broad rule) is ignored with a reason instead of failing validation and being retried.
 */
export const EcrImageActionEventSchema = z.object({
  version: z.string(),
  id: z.string().min(1),
  "detail-type": z.literal("ECR Image Action"),
  source: z.literal("aws.ecr"),
  account: z.string().regex(/^\d{12}$/, "must be a 12-digit account id"),
  time: z.iso.datetime({ offset: true }),
  region: z.string().min(1),
  resources: z.array(z.string()).default([]),
  // The values' shapes are checked after this schema, so that a push ECR could not have made is
  // ignored with its reason instead of failing the Lambda (which EventBridge would retry).
  detail: z.looseObject({
    "action-type": z.string(),
    result: z.string(),
    "repository-name": z.string().min(1),
    "image-digest": z.string().optional(),
    "image-tag": z.string().optional(),
  }),
});

/** A successful push, as the rest of the trigger sees it. */
export interface ImagePush {
  repository: string;
  digest: string;
  tag: string | null;
  /** `<account>.dkr.ecr.<region>.amazonaws.com/<repository>@<digest>`: what the target deploys. */
  image: string;
  eventId: string;
  /** The event's `time`, epoch ms: the order of pushes, whatever the order of delivery. */
  eventTime: number;
}

/** The event is not a valid `ECR Image Action` event: the message names every bad field. */
export class InvalidTriggerEventError extends RolloutsError {
  override readonly name = "InvalidTriggerEventError";

  constructor(details: string, options?: ErrorOptions) {
    super(`ECR Image Action event is invalid: ${details}`, options);
  }
}

export type ParsedPush = { kind: "push"; push: ImagePush } | { kind: "ignored"; reason: string };

/**
 * Validates an incoming event and reduces it to an `ImagePush`, or to a reason to ignore it
 * (not a PUSH, not a SUCCESS, no digest, a repository name, tag or digest that is not the shape
 * ECR gives them). Throws `InvalidTriggerEventError` for anything that is not an ECR Image Action
 * event at all.
 */
export function parseEcrEvent(raw: unknown): ParsedPush {
  const result = EcrImageActionEventSchema.safeParse(raw);
  if (!result.success) {
    throw new InvalidTriggerEventError(formatIssues(result.error, "(event)"), { cause: result.error });
  }
  const event = result.data;
  const detail = event.detail;
  if (detail["action-type"] !== "PUSH")
    return { kind: "ignored", reason: `action-type ${detail["action-type"]}` };
  if (detail.result !== "SUCCESS") return { kind: "ignored", reason: `result ${detail.result}` };
  const digest = detail["image-digest"];
  if (digest === undefined) return { kind: "ignored", reason: "no image-digest" };
  const repository = detail["repository-name"];
  if (!isRepositoryName(repository)) {
    return {
      kind: "ignored",
      reason: `repository-name ${quoted(repository)} is not an ECR repository name (2–256 lower-case letters, digits, ".", "_", "-" and "/")`,
    };
  }
  if (!isImageDigest(digest)) {
    return {
      kind: "ignored",
      reason: `image-digest ${quoted(digest)} is not an ECR image digest (sha256: and 64 lower-case hex digits)`,
    };
  }
  const tag = detail["image-tag"];
  if (tag !== undefined && !isImageTag(tag)) {
    return {
      kind: "ignored",
      reason: `image-tag ${quoted(tag)} is not an image tag (1–300 letters, digits, "_", "." and "-", not starting with "." or "-")`,
    };
  }
  return {
    kind: "push",
    push: {
      repository,
      digest,
      tag: detail["image-tag"] ?? null,
      image: `${registryHost(event.account, event.region)}/${repository}@${digest}`,
      eventId: event.id,
      eventTime: Date.parse(event.time),
    },
  };
}

/** The private registry host of an account and region (China regions use `amazonaws.com.cn`). */
export function registryHost(account: string, region: string): string {
  const suffix = region.startsWith("cn-") ? "amazonaws.com.cn" : "amazonaws.com";
  return `${account}.dkr.ecr.${region}.${suffix}`;
}
