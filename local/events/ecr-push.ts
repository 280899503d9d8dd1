import type { Runtime } from "../runtime.ts";

/**
 * Puts ECR's `ECR Image Action` event of a successful push on the runtime's bus, as ECR sends it:
 * the repository, the digest and the tag (`null`: a push by digest only, whose event has no
 * `image-tag`). An entry the bus refuses is an error naming the push.
 */
export async function putEcrPush(
  runtime: Pick<Runtime, "putEvents" | "clock">,
  push: { repository: string; digest: string; tag: string | null; at?: Date | undefined },
): Promise<void> {
  const result = await runtime.putEvents([
    {
      Source: "aws.ecr",
      DetailType: "ECR Image Action",
      Time: (push.at ?? new Date(runtime.clock.now())).getTime(),
      Detail: JSON.stringify({
        "action-type": "PUSH",
        result: "SUCCESS",
        "repository-name": push.repository,
        "image-digest": push.digest,
        ...(push.tag === null ? {} : { "image-tag": push.tag }),
      }),
    },
  ]);
  if (result.FailedEntryCount)
    throw new Error(`the push of ${push.tag ?? push.digest} was not accepted: ${JSON.stringify(result)}`);
}
