/**
 * The name of an AWS SDK error (`ConditionalCheckFailedException`, `PreconditionFailedException`,
 * …), or undefined for anything else. The SDK's service exceptions are classes, but a client
 * bundled twice, a mocked client or the local façade throws errors that are not instances of
 * them: the name is what every adapter matches on.
 */
export function awsErrorName(err: unknown): string | undefined {
  return typeof err === "object" && err !== null && "name" in err && typeof err.name === "string"
    ? err.name
    : undefined;
}

/** Whether `err` is the AWS error named `name`. */
export function isAwsError(err: unknown, name: string): boolean {
  return awsErrorName(err) === name;
}
