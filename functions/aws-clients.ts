/**
 * The one place that says how long an AWS SDK call may take. The SDK's defaults wait forever on
 * an endpoint that accepts the connection and never answers (no connection or request timeout),
 * which hangs `rollouts abort` and lets a Lambda run into its own timeout without saying why.
 * Every client the project builds (the Lambdas' composition roots, the CLI, the embedded runtime)
 * takes its settings from {@link clientConfig}.
 *
 * The figures, and why:
 * - `connectionTimeout` 3 s: a TCP (and TLS) handshake with an AWS endpoint takes milliseconds;
 *   3 s is far beyond a slow network and well short of a person giving up.
 * - `requestTimeout` 10 s, from sending the request to the end of the answer: the calls made here
 *   (DynamoDB items, task tokens, schedules, events, weights, one CloudWatch `GetMetricData`)
 *   answer in well under a second; 10 s leaves room for a slow one.
 * - `maxAttempts` 3 (the SDK's standard retry mode: the first try and 2 retries with jittered
 *   backoff; a timeout is retried like any transient fault).
 *
 * Worst case for one call: 3 × (3 s + 10 s) plus backoff ≈ 40 s, under the functions' 60 s
 * Lambda timeout, and a clear error rather than a hang at the CLI.
 *
 * Each figure can be changed through the environment (tests make them short; a slow network can
 * make them longer): {@link CLIENT_ENV}.
 */

/** Environment variables that override the figures (whole numbers: milliseconds, attempts). */
export const CLIENT_ENV = {
  connectionTimeoutMs: "ROLLOUTS_AWS_CONNECTION_TIMEOUT_MS",
  requestTimeoutMs: "ROLLOUTS_AWS_REQUEST_TIMEOUT_MS",
  maxAttempts: "ROLLOUTS_AWS_MAX_ATTEMPTS",
} as const;

export const CLIENT_DEFAULTS = {
  connectionTimeoutMs: 3_000,
  requestTimeoutMs: 10_000,
  maxAttempts: 3,
} as const;

/** What every SDK client's constructor receives (spread it first, then the client's own fields). */
export interface ClientConfig {
  requestHandler: {
    connectionTimeout: number;
    requestTimeout: number;
    /** Without it the SDK only logs a warning when `requestTimeout` is exceeded. */
    throwOnRequestTimeout: true;
  };
  maxAttempts: number;
}

/**
 * The settings of an AWS SDK client: NodeHttpHandler's `connectionTimeout` and `requestTimeout`
 * (with `throwOnRequestTimeout`, so a breach is an error, not a warning) and a bounded
 * `maxAttempts`. A value in the environment that is not a whole number > 0 is an error naming
 * the variable: a typo must not silently mean "wait forever".
 */
export function clientConfig(
  source: Readonly<Record<string, string | undefined>> = process.env,
): ClientConfig {
  return {
    requestHandler: {
      connectionTimeout: figure(source, "connectionTimeoutMs"),
      requestTimeout: figure(source, "requestTimeoutMs"),
      throwOnRequestTimeout: true,
    },
    maxAttempts: figure(source, "maxAttempts"),
  };
}

function figure(source: Readonly<Record<string, string | undefined>>, key: keyof typeof CLIENT_ENV): number {
  const name = CLIENT_ENV[key];
  const text = source[name]?.trim();
  if (!text) return CLIENT_DEFAULTS[key];
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`${name} must be a whole number > 0, got "${text}"`);
  }
  return value;
}
