/**
 * What every error of sfn-rollouts extends, so a caller can tell the project's errors from
 * anything else with one `instanceof`. A subclass names itself with a readonly `name` (what a
 * state machine's Retry and Catch match, and what a problem line prints; it must survive the
 * handlers' minified bundles, so it is a string, not the class's own name), and passes
 * `ErrorOptions` through so the error that caused it stays attached as `cause`.
 */
export abstract class RolloutsError extends Error {
  abstract override readonly name: string;

  /** `message` is required (Error's is optional): every error here says what went wrong. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}
