/** ECR `Image Action` events shaped like the sample in the AWS docs. */
export const ACCOUNT = "123456789012";
export const SM = "arn:aws:states:us-west-2:123456789012:stateMachine:checkout-rollout";
export const DIGEST_A = `sha256:${"a1".repeat(32)}`;
export const DIGEST_B = `sha256:${"b2".repeat(32)}`;

export function ecrPush(
  overrides: {
    id?: string;
    time?: string;
    digest?: string;
    tag?: string | null;
    repository?: string;
    detail?: object;
  } = {},
) {
  const tag = overrides.tag === undefined ? "v1" : overrides.tag;
  return {
    version: "0",
    id: overrides.id ?? "13cde686-328b-6117-af20-0e5566167482",
    "detail-type": "ECR Image Action",
    source: "aws.ecr",
    account: ACCOUNT,
    time: overrides.time ?? "2026-11-30T12:00:00Z",
    region: "us-west-2",
    resources: [],
    detail: {
      result: "SUCCESS",
      "repository-name": overrides.repository ?? "checkout",
      "image-digest": overrides.digest ?? DIGEST_A,
      "action-type": "PUSH",
      ...(tag === null ? {} : { "image-tag": tag }),
      ...overrides.detail,
    },
  };
}
