import { ANALYSIS_FUNCTION_TIMEOUT_SECONDS } from "./limits.ts";

/**
 * How a Timer firing of a minute or more reaches the resume function, and how late a firing that
 * does arrive can be (`TIMER_LATEST_FIRING_SECONDS`). EventBridge
 * Scheduler fires within a minute of `at` and invokes resume asynchronously, retrying a failed
 * invoke up to `schedulerRetryAttempts` times while the firing is younger than
 * `schedulerMaximumEventAgeSeconds`; then Lambda runs it, and if the function throws retries it
 * `asyncRetryAttempts` times (about 1, then 2 minutes apart) while the event is younger than
 * `asyncMaximumEventAgeSeconds`. A firing that fails every one of those goes to resume's
 * on-failure destination, the redelivery queue, which hands it to resume again (synchronously,
 * through an SQS event source) up to `redeliveryReceives` times, `redeliveryVisibilitySeconds`
 * apart; a firing Scheduler could not deliver, or still failing after those, goes to the Timer's
 * dead-letter queue. The trigger's ECR push events get the same async retries and age, to the
 * trigger's queue.
 */
export const TIMER_DELIVERY = {
  /** Scheduler fires a one-time schedule within this many seconds of its `at`. */
  schedulerLatenessSeconds: 60,
  schedulerRetryAttempts: 3,
  schedulerMaximumEventAgeSeconds: 300,
  asyncRetryAttempts: 2,
  /** Three 60 s attempts and the 1 + 2 minutes between them take 6 minutes; 10 leave room for throttling. */
  asyncMaximumEventAgeSeconds: 600,
  /**
   * Receives of the redelivery queue before a firing moves to the dead-letter queue (its
   * `maxReceiveCount`): a tick Lambda gave up on after three failures (a few minutes of throttling)
   * is tried ten more times over ten minutes instead of being lost, and its analysis does not
   * time out.
   */
  redeliveryReceives: 10,
  /**
   * Seconds a received firing stays invisible (the queue's visibility timeout): resume's 60 s
   * timeout, the least Lambda accepts for its event source. An attempt still running when the
   * next one starts does no harm: every firing is idempotent.
   */
  redeliveryVisibilitySeconds: 60,
} as const;

/**
 * Seconds after the asynchronous path gives a firing up that the redelivery queue may still
 * deliver it (`TIMER_DELIVERY`, infra/dead-letters.ts): received at once, then again one
 * visibility timeout after each failed receive, the last attempt running up to the function's
 * timeout.
 */
const REDELIVERY_SECONDS =
  (TIMER_DELIVERY.redeliveryReceives - 1) * TIMER_DELIVERY.redeliveryVisibilitySeconds +
  ANALYSIS_FUNCTION_TIMEOUT_SECONDS;

/**
 * The latest, in seconds after it was due, a firing the Timer does deliver can arrive, from the
 * retry policy in `TIMER_DELIVERY` (which the construct configures): the watchdog's grace
 * (functions/analysis/watchdog.ts), and what a timed wait's Task allows beyond its duration:
 * - through Scheduler (delays of a minute and more): it fires within 60 s of `at`, retries a
 *   failed invoke while the firing is under 300 s old, and Lambda then retries a throwing function
 *   twice while the event is under 600 s old, the last attempt running up to the function's 60 s
 *   timeout: 60 + 300 + 600 + 60 = 1020 s; then the redelivery queue hands it to resume ten
 *   more times, 60 s apart: 9 × 60 + 60 = 600 s more, 1620 s (27 minutes). Past that the
 *   firing is in the dead-letter queue.
 * - through the ticker (under a minute): four attempts of 60 s with 2, 4 and 8 s between them,
 *   254 s, then Lambda's and the queue's retries as above, well within.
 */
export const TIMER_LATEST_FIRING_SECONDS =
  Math.max(
    TIMER_DELIVERY.schedulerLatenessSeconds +
      TIMER_DELIVERY.schedulerMaximumEventAgeSeconds +
      TIMER_DELIVERY.asyncMaximumEventAgeSeconds +
      ANALYSIS_FUNCTION_TIMEOUT_SECONDS,
    4 * ANALYSIS_FUNCTION_TIMEOUT_SECONDS +
      2 +
      4 +
      8 +
      TIMER_DELIVERY.asyncMaximumEventAgeSeconds +
      ANALYSIS_FUNCTION_TIMEOUT_SECONDS,
  ) + REDELIVERY_SECONDS;
